package org.prosecutor.jvm;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.objectweb.asm.Opcodes;
import org.objectweb.asm.Type;
import org.objectweb.asm.tree.AbstractInsnNode;
import org.objectweb.asm.tree.ClassNode;
import org.objectweb.asm.tree.FieldInsnNode;
import org.objectweb.asm.tree.IincInsnNode;
import org.objectweb.asm.tree.InsnList;
import org.objectweb.asm.tree.InvokeDynamicInsnNode;
import org.objectweb.asm.tree.JumpInsnNode;
import org.objectweb.asm.tree.LabelNode;
import org.objectweb.asm.tree.LineNumberNode;
import org.objectweb.asm.tree.LocalVariableNode;
import org.objectweb.asm.tree.LookupSwitchInsnNode;
import org.objectweb.asm.tree.MethodInsnNode;
import org.objectweb.asm.tree.MethodNode;
import org.objectweb.asm.tree.MultiANewArrayInsnNode;
import org.objectweb.asm.tree.TableSwitchInsnNode;
import org.objectweb.asm.tree.TryCatchBlockNode;
import org.objectweb.asm.tree.TypeInsnNode;
import org.objectweb.asm.tree.VarInsnNode;
import org.objectweb.asm.tree.analysis.Analyzer;
import org.objectweb.asm.tree.analysis.AnalyzerException;
import org.objectweb.asm.tree.analysis.Frame;
import org.objectweb.asm.tree.analysis.SourceInterpreter;
import org.objectweb.asm.tree.analysis.SourceValue;

/**
 * Static facts of one method at the grain of Jimple's three-address statements
 * (docs/frontend-java.md "Statements"). A statement is anchored at one bytecode instruction:
 * a store to a local (with the computation it stores, when that immediately precedes it), a
 * store to a field, static or array element, an invocation, a value-producing computation
 * whose value another statement consumes (it defines a temporary {@code $k}), a conditional
 * branch or switch, a return, a throw, or the first instruction of an exception handler.
 * Loads of locals and constants, stack shuffles, casts, conversions and comparisons feeding a
 * branch belong to the statement that consumes their value.
 */
final class Bytecode {
    private Bytecode() {}

    /** A heap access of a statement: at run time, the object reached from {@code var}. */
    static final class HeapSite {
        final Stmt stmt;
        final String var;
        final String attr; // "-" or a field name (documentation of heap_access.facts)
        final boolean def;
        final int field; // Registry field index for a field cell, -1 for the object itself
        final boolean isStatic;
        int gid = -1;

        HeapSite(Stmt stmt, String var, String attr, boolean def, int field, boolean isStatic) {
            this.stmt = stmt;
            this.var = var;
            this.attr = attr;
            this.def = def;
            this.field = field;
            this.isStatic = isStatic;
        }
    }

    static final class Stmt {
        final int index;
        final AbstractInsnNode anchor;
        final int insnIndex;
        String kind;
        int line;
        String text = "";
        AbstractInsnNode mergedStore;
        final LinkedHashSet<String> defs = new LinkedHashSet<>();
        final LinkedHashSet<String> uses = new LinkedHashSet<>();
        final List<String> actuals = new ArrayList<>(); // index i -> var or null
        String receiver;
        boolean copy;
        final List<HeapSite> heap = new ArrayList<>();
        final LinkedHashSet<Stmt> normal = new LinkedHashSet<>();
        final LinkedHashSet<Stmt> exceptional = new LinkedHashSet<>();
        boolean loopHead;
        int gid = -1;
        /** The method it belongs to (set by the registry). */
        MethodModel owner;

        Stmt(int index, AbstractInsnNode anchor, int insnIndex) {
            this.index = index;
            this.anchor = anchor;
            this.insnIndex = insnIndex;
        }
    }

    static final class MethodModel {
        final String owner; // internal name
        final String name;
        final String desc;
        String id;
        final String role;
        final String file;
        final List<Stmt> stmts = new ArrayList<>();
        final List<String> formals = new ArrayList<>();
        String thisVar;
        Stmt entry;
        int gid = -1;

        /** The constructor of the instrumented method's super() or this() call, or null. */
        AbstractInsnNode superCall;
        /** Its index in the original instruction list. */
        int superIndex = -1;

        MethodModel(String owner, String name, String desc, String role, String file) {
            this(owner, name, desc, role, file, owner.replace('/', '.') + "." + name);
        }

        /** Java-like parameter list: {@code (String,int,char[])}. */
        static String signature(String desc) {
            StringBuilder b = new StringBuilder("(");
            Type[] args = Type.getArgumentTypes(desc);
            for (int k = 0; k < args.length; k++) {
                String c = args[k].getClassName();
                b.append(k == 0 ? "" : ",").append(c.substring(c.lastIndexOf('.') + 1));
            }
            return b.append(')').toString();
        }

        MethodModel(String owner, String name, String desc, String role, String file, String id) {
            this.owner = owner;
            this.name = name;
            this.desc = desc;
            this.role = role;
            this.file = file;
            this.id = id;
        }

        String stmtId(Stmt s) {
            return id + "#" + s.index;
        }
    }

    /** Which classes are instrumented (their methods are traced): calls into them are not library calls. */
    interface ClassKind {
        boolean instrumented(String internalName);

        int fieldIndex(String owner, String name);
    }

    // ---------------------------------------------------------------- analysis

    /** Source values that pass through stack shuffles; a load is its own source. */
    private static final class Sources extends SourceInterpreter {
        Sources() {
            super(Opcodes.ASM9);
        }

        @Override
        public SourceValue copyOperation(AbstractInsnNode insn, SourceValue value) {
            int op = insn.getOpcode();
            if (op >= Opcodes.ILOAD && op <= Opcodes.ALOAD) {
                return new SourceValue(value.getSize(), insn);
            }
            return value;
        }
    }

    private static final class FlowAnalyzer<V extends org.objectweb.asm.tree.analysis.Value>
            extends Analyzer<V> {
        final List<int[]> edges = new ArrayList<>();

        FlowAnalyzer(org.objectweb.asm.tree.analysis.Interpreter<V> i) {
            super(i);
        }

        @Override
        protected void newControlFlowEdge(int insn, int successor) {
            edges.add(new int[] {insn, successor, 0});
        }

        @Override
        protected boolean newControlFlowExceptionEdge(int insn, TryCatchBlockNode tcb) {
            return true; // statement-level exceptional edges come from the exception table
        }
    }

    /**
     * Analyses one method. Its id is {@code package.Class.name}, with the parameter list when the
     * class declares several methods of that name ({@code StringUtils.leftPad(String,int,char)}).
     */
    static MethodModel analyze(ClassNode cn, MethodNode mn, String role, String file, ClassKind kinds)
            throws AnalyzerException {
        MethodModel m = new MethodModel(cn.name, mn.name, mn.desc, role, file);
        int same = 0;
        for (MethodNode other : cn.methods) {
            same += other.name.equals(mn.name) ? 1 : 0;
        }
        if (same > 1) {
            m.id = m.id + MethodModel.signature(mn.desc);
        }
        FlowAnalyzer<SourceValue> sa = new FlowAnalyzer<>(new Sources());
        Frame<SourceValue>[] src = sa.analyze(cn.name, mn);
        new Builder(m, mn, src, sa.edges, kinds).build();
        return m;
    }

    private static final class Builder {
        final MethodModel m;
        final MethodNode mn;
        final InsnList insns;
        final Frame<SourceValue>[] src;
        final List<int[]> edges;
        final ClassKind kinds;
        final Set<LabelNode> targets = new HashSet<>();
        final Set<AbstractInsnNode> handlerStarts = new HashSet<>();
        final Map<AbstractInsnNode, AbstractInsnNode> mergedInto = new IdentityHashMap<>();
        final Map<AbstractInsnNode, Stmt> stmtOf = new IdentityHashMap<>();

        Builder(MethodModel m, MethodNode mn, Frame<SourceValue>[] src, List<int[]> edges, ClassKind kinds) {
            this.m = m;
            this.mn = mn;
            this.insns = mn.instructions;
            this.src = src;
            this.edges = edges;
            this.kinds = kinds;
        }

        void build() {
            collectTargets();
            findStatements();
            for (Stmt s : m.stmts) {
                describe(s);
            }
            formals();
            controlFlow();
            if ("<init>".equals(mn.name)) {
                m.superCall = superCall();
                m.superIndex = m.superCall == null ? -1 : insns.indexOf(m.superCall);
            }
        }

        /** A constructor's call of super() or this() on its own receiver. */
        AbstractInsnNode superCall() {
            for (AbstractInsnNode i = insns.getFirst(); i != null; i = i.getNext()) {
                if (i.getOpcode() != Opcodes.INVOKESPECIAL || !reachable(i)) {
                    continue;
                }
                MethodInsnNode mi = (MethodInsnNode) i;
                if (!"<init>".equals(mi.name)) {
                    continue;
                }
                int n = consumed(i);
                for (AbstractInsnNode p : operand(i, 0, n).insns) {
                    if (p.getOpcode() == Opcodes.ALOAD && ((VarInsnNode) p).var == 0) {
                        return i;
                    }
                }
            }
            return null;
        }

        void collectTargets() {
            for (AbstractInsnNode i = insns.getFirst(); i != null; i = i.getNext()) {
                if (i instanceof JumpInsnNode) {
                    targets.add(((JumpInsnNode) i).label);
                } else if (i instanceof TableSwitchInsnNode) {
                    TableSwitchInsnNode t = (TableSwitchInsnNode) i;
                    targets.add(t.dflt);
                    targets.addAll(t.labels);
                } else if (i instanceof LookupSwitchInsnNode) {
                    LookupSwitchInsnNode t = (LookupSwitchInsnNode) i;
                    targets.add(t.dflt);
                    targets.addAll(t.labels);
                }
            }
            for (TryCatchBlockNode t : mn.tryCatchBlocks) {
                targets.add(t.handler);
                AbstractInsnNode h = real(t.handler);
                if (h != null) {
                    handlerStarts.add(h);
                }
            }
        }

        static AbstractInsnNode real(AbstractInsnNode i) {
            while (i != null && i.getOpcode() < 0) {
                i = i.getNext();
            }
            return i;
        }

        boolean reachable(AbstractInsnNode i) {
            return src[insns.indexOf(i)] != null;
        }

        void findStatements() {
            int line = 0;
            for (AbstractInsnNode i = insns.getFirst(); i != null; i = i.getNext()) {
                if (i instanceof LineNumberNode) {
                    line = ((LineNumberNode) i).line;
                    continue;
                }
                if (i.getOpcode() < 0 || !reachable(i) || mergedInto.containsKey(i)) {
                    continue;
                }
                boolean handler = handlerStarts.contains(i);
                if (!handler && !isAnchor(i)) {
                    continue;
                }
                Stmt s = new Stmt(m.stmts.size(), i, insns.indexOf(i));
                s.line = line;
                if (handler) {
                    s.kind = "catch";
                } else if (isValue(i)) {
                    AbstractInsnNode next = nextStore(i);
                    if (next != null) {
                        s.mergedStore = next;
                        mergedInto.put(next, i);
                    }
                }
                m.stmts.add(s);
                stmtOf.put(i, s);
            }
        }

        /** The local store that immediately follows {@code i} (no jump target between), or null. */
        AbstractInsnNode nextStore(AbstractInsnNode i) {
            for (AbstractInsnNode n = i.getNext(); n != null; n = n.getNext()) {
                if (n instanceof LabelNode && targets.contains(n)) {
                    return null;
                }
                if (n.getOpcode() < 0) {
                    continue;
                }
                int op = n.getOpcode();
                boolean store = op >= Opcodes.ISTORE && op <= Opcodes.ASTORE;
                return store && !handlerStarts.contains(n) && valueSize(i) > 0 ? n : null;
            }
            return null;
        }

        // ------------------------------------------------------------ classification

        static boolean isTransparent(AbstractInsnNode i) {
            int op = i.getOpcode();
            return (op >= Opcodes.ACONST_NULL && op <= Opcodes.ALOAD)
                    || (op >= Opcodes.POP && op <= Opcodes.SWAP)
                    || (op >= Opcodes.I2L && op <= Opcodes.I2S)
                    || (op >= Opcodes.LCMP && op <= Opcodes.DCMPG)
                    || op == Opcodes.CHECKCAST
                    || op == Opcodes.NOP
                    || op == Opcodes.GOTO
                    || op == Opcodes.MONITORENTER
                    || op == Opcodes.MONITOREXIT;
        }

        /** Computations whose value is a statement's (a temporary or a merged local store). */
        static boolean isValue(AbstractInsnNode i) {
            int op = i.getOpcode();
            if (i instanceof MethodInsnNode || i instanceof InvokeDynamicInsnNode) {
                return valueSize(i) > 0;
            }
            return (op >= Opcodes.IALOAD && op <= Opcodes.SALOAD)
                    || (op >= Opcodes.IADD && op <= Opcodes.LXOR)
                    || op == Opcodes.GETFIELD
                    || op == Opcodes.GETSTATIC
                    || op == Opcodes.NEW
                    || op == Opcodes.NEWARRAY
                    || op == Opcodes.ANEWARRAY
                    || op == Opcodes.MULTIANEWARRAY
                    || op == Opcodes.ARRAYLENGTH
                    || op == Opcodes.INSTANCEOF;
        }

        static int valueSize(AbstractInsnNode i) {
            if (i instanceof MethodInsnNode) {
                return Type.getReturnType(((MethodInsnNode) i).desc).getSize();
            }
            if (i instanceof InvokeDynamicInsnNode) {
                return Type.getReturnType(((InvokeDynamicInsnNode) i).desc).getSize();
            }
            return 1;
        }

        static boolean isAnchor(AbstractInsnNode i) {
            return !isTransparent(i); // stores (ISTORE..ASTORE) are not transparent
        }

        // ------------------------------------------------------------ operands

        /** How many stack values {@code i} consumes. */
        static int consumed(AbstractInsnNode i) {
            int op = i.getOpcode();
            if (i instanceof MethodInsnNode) {
                MethodInsnNode mi = (MethodInsnNode) i;
                return Type.getArgumentTypes(mi.desc).length + (op == Opcodes.INVOKESTATIC ? 0 : 1);
            }
            if (i instanceof InvokeDynamicInsnNode) {
                return Type.getArgumentTypes(((InvokeDynamicInsnNode) i).desc).length;
            }
            if (i instanceof MultiANewArrayInsnNode) {
                return ((MultiANewArrayInsnNode) i).dims;
            }
            if (op >= Opcodes.ISTORE && op <= Opcodes.ASTORE) {
                return 1;
            }
            if (op >= Opcodes.IASTORE && op <= Opcodes.SASTORE) {
                return 3;
            }
            if (op >= Opcodes.IALOAD && op <= Opcodes.SALOAD) {
                return 2;
            }
            if (op >= Opcodes.IADD && op <= Opcodes.DREM || op >= Opcodes.ISHL && op <= Opcodes.LXOR) {
                return 2;
            }
            if (op >= Opcodes.LCMP && op <= Opcodes.DCMPG) {
                return 2;
            }
            if (op >= Opcodes.IF_ICMPEQ && op <= Opcodes.IF_ACMPNE) {
                return 2;
            }
            switch (op) {
                case Opcodes.PUTFIELD:
                    return 2;
                case Opcodes.INEG:
                case Opcodes.LNEG:
                case Opcodes.FNEG:
                case Opcodes.DNEG:
                case Opcodes.PUTSTATIC:
                case Opcodes.GETFIELD:
                case Opcodes.ARRAYLENGTH:
                case Opcodes.INSTANCEOF:
                case Opcodes.CHECKCAST:
                case Opcodes.NEWARRAY:
                case Opcodes.ANEWARRAY:
                case Opcodes.IFEQ:
                case Opcodes.IFNE:
                case Opcodes.IFLT:
                case Opcodes.IFGE:
                case Opcodes.IFGT:
                case Opcodes.IFLE:
                case Opcodes.IFNULL:
                case Opcodes.IFNONNULL:
                case Opcodes.TABLESWITCH:
                case Opcodes.LOOKUPSWITCH:
                case Opcodes.IRETURN:
                case Opcodes.LRETURN:
                case Opcodes.FRETURN:
                case Opcodes.DRETURN:
                case Opcodes.ARETURN:
                case Opcodes.ATHROW:
                case Opcodes.MONITORENTER:
                case Opcodes.MONITOREXIT:
                    return 1;
                default:
                    break;
            }
            if (op >= Opcodes.I2L && op <= Opcodes.I2S) {
                return 1;
            }
            return 0;
        }

        /** The sources of the k-th of the n values {@code i} consumes (0 = deepest). */
        SourceValue operand(AbstractInsnNode i, int k, int n) {
            Frame<SourceValue> f = src[insns.indexOf(i)];
            return f.getStack(f.getStackSize() - n + k);
        }

        /** The variables a value comes from (locals read, temporaries of statements). */
        LinkedHashSet<String> vars(SourceValue v) {
            LinkedHashSet<String> out = new LinkedHashSet<>();
            collect(v, out, new HashSet<>());
            return out;
        }

        void collect(SourceValue v, Set<String> out, Set<AbstractInsnNode> seen) {
            for (AbstractInsnNode p : v.insns) {
                if (!seen.add(p)) {
                    continue;
                }
                int op = p.getOpcode();
                if (op >= Opcodes.ILOAD && op <= Opcodes.ALOAD) {
                    out.add(local(((VarInsnNode) p).var, p, false));
                } else if (stmtOf.containsKey(p)) {
                    out.add("$" + stmtOf.get(p).index);
                } else if (!reachable(p)) {
                    continue;
                } else {
                    int n = consumed(p);
                    for (int k = 0; k < n; k++) {
                        collect(operand(p, k, n), out, seen);
                    }
                }
            }
        }

        /** One variable when the value is exactly one variable's, else null. */
        String single(SourceValue v) {
            LinkedHashSet<String> s = vars(v);
            return s.size() == 1 ? s.iterator().next() : null;
        }

        boolean isPlainVar(SourceValue v) {
            for (AbstractInsnNode p : v.insns) {
                int op = p.getOpcode();
                boolean load = op >= Opcodes.ILOAD && op <= Opcodes.ALOAD;
                if (!load && !stmtOf.containsKey(p)) {
                    return false;
                }
            }
            return single(v) != null;
        }

        /** The name of local slot {@code slot} at {@code at} (after it, for a store). */
        String local(int slot, AbstractInsnNode at, boolean store) {
            int pos = insns.indexOf(at) + (store ? 1 : 0);
            if (mn.localVariables != null) {
                for (LocalVariableNode lv : mn.localVariables) {
                    if (lv.index == slot
                            && insns.indexOf(lv.start) <= pos
                            && pos < insns.indexOf(lv.end)) {
                        return lv.name;
                    }
                }
                // a store's scope may begin a little after it (javac starts it at the next line)
                for (LocalVariableNode lv : mn.localVariables) {
                    if (lv.index == slot && insns.indexOf(lv.start) >= pos) {
                        return lv.name;
                    }
                }
            }
            if (slot == 0 && (mn.access & Opcodes.ACC_STATIC) == 0) {
                return "this";
            }
            return "l" + slot;
        }

        // ------------------------------------------------------------ statements

        void describe(Stmt s) {
            AbstractInsnNode i = s.anchor;
            int op = i.getOpcode();
            int n = consumed(i);
            List<SourceValue> ops = new ArrayList<>();
            for (int k = 0; k < n; k++) {
                ops.add(operand(i, k, n));
            }
            for (SourceValue v : ops) {
                s.uses.addAll(vars(v));
            }
            String target = null;
            if (s.mergedStore != null) {
                target = local(((VarInsnNode) s.mergedStore).var, s.mergedStore, true);
            } else if (isValue(i)) {
                target = "$" + s.index;
            }
            if ("catch".equals(s.kind)) {
                // A handler computes nothing: it receives the exception in flight, which reaches it
                // through the statement that threw (it is control-dependent on it, R_CTRL1), so
                // it is a copy, as `y = x` is (unless its first instruction computes a value).
                s.copy = true;
                if (op >= Opcodes.ISTORE && op <= Opcodes.ASTORE) {
                    String v = local(((VarInsnNode) i).var, i, true);
                    s.defs.add(v);
                    s.uses.clear();
                    s.text = "catch " + v;
                } else {
                    s.uses.clear();
                    s.text = "catch";
                    if (isValue(i) || op >= Opcodes.ISTORE && op <= Opcodes.ASTORE) {
                        s.copy = false;
                        describeOp(s, i, op, ops, target);
                        s.kind = "catch";
                    }
                }
                return;
            }
            describeOp(s, i, op, ops, target);
        }

        void describeOp(Stmt s, AbstractInsnNode i, int op, List<SourceValue> ops, String target) {
            if (i instanceof MethodInsnNode || i instanceof InvokeDynamicInsnNode) {
                describeCall(s, i, ops, target);
            } else if (op >= Opcodes.ISTORE && op <= Opcodes.ASTORE) {
                String v = local(((VarInsnNode) i).var, i, true);
                s.kind = "assign";
                s.defs.add(v);
                s.copy = isPlainVar(ops.get(0));
                s.text = v + " = " + show(ops.get(0));
            } else if (op == Opcodes.IINC) {
                IincInsnNode ii = (IincInsnNode) i;
                String v = local(ii.var, i, false);
                s.kind = "assign";
                s.defs.add(v);
                s.uses.add(v);
                s.text = v + " = " + v + (ii.incr < 0 ? " - " + -ii.incr : " + " + ii.incr);
            } else if (op == Opcodes.PUTFIELD) {
                FieldInsnNode f = (FieldInsnNode) i;
                String base = single(ops.get(0));
                s.kind = "assign";
                if (base != null) {
                    s.defs.add(base);
                    s.heap.add(new HeapSite(s, base, f.name, true, kinds.fieldIndex(f.owner, f.name), false));
                }
                s.text = show(ops.get(0)) + "." + f.name + " = " + show(ops.get(1));
            } else if (op == Opcodes.PUTSTATIC) {
                FieldInsnNode f = (FieldInsnNode) i;
                String cell = staticVar(f);
                s.kind = "assign";
                s.defs.add(cell);
                s.heap.add(new HeapSite(s, cell, "-", true, kinds.fieldIndex(f.owner, f.name), true));
                s.text = cell + " = " + show(ops.get(0));
            } else if (op >= Opcodes.IASTORE && op <= Opcodes.SASTORE) {
                String base = single(ops.get(0));
                s.kind = "assign";
                if (base != null) {
                    s.defs.add(base);
                    s.heap.add(new HeapSite(s, base, "-", true, -1, false));
                }
                s.text = show(ops.get(0)) + "[" + show(ops.get(1)) + "] = " + show(ops.get(2));
            } else if (isValue(i)) {
                describeValue(s, i, op, ops, target);
            } else if (i instanceof JumpInsnNode) {
                s.kind = "branch";
                s.text = "if " + condition(op, ops);
            } else if (i instanceof TableSwitchInsnNode || i instanceof LookupSwitchInsnNode) {
                s.kind = "goto";
                s.text = "switch (" + show(ops.get(0)) + ")";
            } else if (op >= Opcodes.IRETURN && op <= Opcodes.RETURN) {
                s.kind = "return";
                // A void `return` passes no value at all, so it is no cause of what its call step
                // defines (R_CL1 hands the return's `#` on to it): a `<clinit>` runs inside
                // whichever statement first loads the class, and its `return` (on the line of the
                // last static field) took the blame for that statement's value.
                s.copy = ops.isEmpty() || isPlainVar(ops.get(0));
                s.text = ops.isEmpty() ? "return" : "return " + show(ops.get(0));
            } else if (op == Opcodes.ATHROW) {
                s.kind = "throw";
                // `throw e` hands the exception object on as `return e` does: a copy. The
                // statements that built it (`new E(msg)`, its constructor call) are the causes.
                s.copy = isPlainVar(ops.get(0));
                s.text = "throw " + show(ops.get(0));
            } else {
                s.kind = "nop";
                s.text = "nop";
            }
        }

        void describeValue(Stmt s, AbstractInsnNode i, int op, List<SourceValue> ops, String target) {
            s.kind = "assign";
            s.defs.add(target);
            String rhs;
            if (op == Opcodes.GETFIELD) {
                FieldInsnNode f = (FieldInsnNode) i;
                String base = single(ops.get(0));
                if (base != null) {
                    s.heap.add(new HeapSite(s, base, f.name, false, kinds.fieldIndex(f.owner, f.name), false));
                }
                rhs = show(ops.get(0)) + "." + f.name;
            } else if (op == Opcodes.GETSTATIC) {
                FieldInsnNode f = (FieldInsnNode) i;
                String cell = staticVar(f);
                s.uses.add(cell);
                s.heap.add(new HeapSite(s, cell, "-", false, kinds.fieldIndex(f.owner, f.name), true));
                rhs = cell;
            } else if (op >= Opcodes.IALOAD && op <= Opcodes.SALOAD) {
                String base = single(ops.get(0));
                if (base != null) {
                    s.heap.add(new HeapSite(s, base, "-", false, -1, false));
                }
                rhs = show(ops.get(0)) + "[" + show(ops.get(1)) + "]";
            } else if (op == Opcodes.ARRAYLENGTH) {
                String base = single(ops.get(0));
                if (base != null) {
                    s.heap.add(new HeapSite(s, base, "-", false, -1, false));
                }
                rhs = show(ops.get(0)) + ".length";
            } else if (op == Opcodes.NEW) {
                rhs = "new " + simple(((TypeInsnNode) i).desc);
            } else if (op == Opcodes.NEWARRAY || op == Opcodes.ANEWARRAY || op == Opcodes.MULTIANEWARRAY) {
                rhs = "new array[" + showAll(ops) + "]";
            } else if (op == Opcodes.INSTANCEOF) {
                rhs = show(ops.get(0)) + " instanceof " + simple(((TypeInsnNode) i).desc);
            } else if (ops.size() == 2) {
                rhs = show(ops.get(0)) + " " + symbol(op) + " " + show(ops.get(1));
            } else {
                rhs = symbol(op) + show(ops.get(0));
            }
            s.text = target + " = " + rhs;
        }

        void describeCall(Stmt s, AbstractInsnNode i, List<SourceValue> ops, String target) {
            s.kind = "call";
            String owner;
            String name;
            String desc;
            boolean hasReceiver;
            if (i instanceof MethodInsnNode) {
                MethodInsnNode mi = (MethodInsnNode) i;
                owner = mi.owner;
                name = mi.name;
                desc = mi.desc;
                hasReceiver = mi.getOpcode() != Opcodes.INVOKESTATIC;
            } else {
                InvokeDynamicInsnNode d = (InvokeDynamicInsnNode) i;
                owner = "<indy>";
                name = d.name;
                desc = d.desc;
                hasReceiver = false;
            }
            Type[] args = Type.getArgumentTypes(desc);
            boolean isVoid = Type.getReturnType(desc).getSort() == Type.VOID;
            int first = hasReceiver ? 1 : 0;
            if (target != null) {
                s.defs.add(target);
            }
            boolean library = !"<indy>".equals(owner) && !kinds.instrumented(owner);
            for (int k = 0; k < args.length; k++) {
                SourceValue v = ops.get(first + k);
                String a = isPlainVar(v) ? single(v) : null;
                s.actuals.add(a);
                boolean ref = args[k].getSort() == Type.OBJECT || args[k].getSort() == Type.ARRAY;
                if (a != null && ref) {
                    s.defs.add(a); // Table 2: R_a
                    if (library && !immutable(args[k].getInternalName())) {
                        s.heap.add(new HeapSite(s, a, "-", true, -1, false));
                    }
                }
            }
            String recv = null;
            if (hasReceiver) {
                recv = single(ops.get(0));
                s.receiver = recv;
                boolean init = "<init>".equals(name);
                if (recv != null && (isVoid || library && mutating(owner, name))) {
                    s.defs.add(recv);
                }
                if (recv != null && library && !init) {
                    s.heap.add(new HeapSite(s, recv, "-", false, -1, false));
                    if (s.defs.contains(recv)) {
                        s.heap.add(new HeapSite(s, recv, "-", true, -1, false));
                    }
                }
            }
            StringBuilder b = new StringBuilder();
            if (target != null) {
                b.append(target).append(" = ");
            }
            if (hasReceiver && "<init>".equals(name) && "this".equals(recv) && "<init>".equals(mn.name)) {
                b.append(((MethodInsnNode) i).owner.equals(m.owner) ? "this" : "super").append('(');
                b.append(showAll(ops.subList(first, ops.size()))).append(')');
                s.text = b.toString();
                return;
            } else if (hasReceiver) {
                b.append(show(ops.get(0))).append('.');
            } else if (!"<indy>".equals(owner)) {
                b.append(simple(owner)).append('.');
            }
            b.append(name).append('(');
            List<SourceValue> argOps = ops.subList(first, ops.size());
            b.append(showAll(argOps)).append(')');
            s.text = b.toString();
        }

        static final Set<String> IMMUTABLE = new HashSet<>(List.of(
                "java/lang/String", "java/lang/Integer", "java/lang/Long", "java/lang/Short",
                "java/lang/Byte", "java/lang/Character", "java/lang/Boolean", "java/lang/Double",
                "java/lang/Float", "java/lang/Math", "java/lang/StrictMath", "java/lang/Object",
                "java/lang/Class", "java/math/BigInteger", "java/math/BigDecimal"));
        static final Set<String> READERS = new HashSet<>(List.of(
                "equals", "hashCode", "toString", "size", "length", "isEmpty", "get", "contains",
                "containsKey", "containsValue", "charAt", "compareTo", "getClass", "indexOf",
                "getKey", "getValue", "peek", "valueOf", "intValue", "longValue", "doubleValue",
                "booleanValue", "charValue", "lastIndexOf", "subList", "keySet", "values",
                "entrySet", "stream", "iterator", "listIterator", "toArray", "hasNext"));

        static boolean immutable(String internalName) {
            return IMMUTABLE.contains(internalName);
        }

        /** Whether a library call may mutate its receiver (a non-void one; void ones always define it). */
        static boolean mutating(String owner, String name) {
            return !immutable(owner) && !READERS.contains(name);
        }

        String staticVar(FieldInsnNode f) {
            return f.owner.replace('/', '.') + "." + f.name;
        }

        static String simple(String internal) {
            int k = internal.lastIndexOf('/');
            return k < 0 ? internal : internal.substring(k + 1);
        }

        String show(SourceValue v) {
            LinkedHashSet<String> s = vars(v);
            if (s.isEmpty()) {
                for (AbstractInsnNode p : v.insns) {
                    String c = constant(p);
                    if (c != null) {
                        return c;
                    }
                }
                return "_";
            }
            if (s.size() == 1 && isPlainVar(v)) {
                return s.iterator().next();
            }
            return "f(" + String.join(", ", s) + ")";
        }

        String showAll(List<SourceValue> vs) {
            List<String> parts = new ArrayList<>();
            for (SourceValue v : vs) {
                parts.add(show(v));
            }
            return String.join(", ", parts);
        }

        static String constant(AbstractInsnNode p) {
            int op = p.getOpcode();
            if (op == Opcodes.ACONST_NULL) {
                return "null";
            }
            if (op >= Opcodes.ICONST_M1 && op <= Opcodes.ICONST_5) {
                return Integer.toString(op - Opcodes.ICONST_0);
            }
            if (op == Opcodes.LCONST_0 || op == Opcodes.LCONST_1) {
                return Integer.toString(op - Opcodes.LCONST_0);
            }
            if (p instanceof org.objectweb.asm.tree.IntInsnNode && op != Opcodes.NEWARRAY) {
                return Integer.toString(((org.objectweb.asm.tree.IntInsnNode) p).operand);
            }
            if (p instanceof org.objectweb.asm.tree.LdcInsnNode) {
                Object c = ((org.objectweb.asm.tree.LdcInsnNode) p).cst;
                String t = c instanceof String ? '"' + (String) c + '"' : String.valueOf(c);
                return t.length() > 40 ? t.substring(0, 37) + "..." : t;
            }
            return null;
        }

        String condition(int op, List<SourceValue> ops) {
            switch (op) {
                case Opcodes.IFNULL:
                    return show(ops.get(0)) + " == null";
                case Opcodes.IFNONNULL:
                    return show(ops.get(0)) + " != null";
                case Opcodes.IFEQ:
                    return show(ops.get(0)) + " == 0";
                case Opcodes.IFNE:
                    return show(ops.get(0)) + " != 0";
                case Opcodes.IFLT:
                    return show(ops.get(0)) + " < 0";
                case Opcodes.IFGE:
                    return show(ops.get(0)) + " >= 0";
                case Opcodes.IFGT:
                    return show(ops.get(0)) + " > 0";
                case Opcodes.IFLE:
                    return show(ops.get(0)) + " <= 0";
                default:
                    break;
            }
            String[] sym = {"==", "!=", "<", ">=", ">", "<=", "==", "!="};
            return show(ops.get(0)) + " " + sym[op - Opcodes.IF_ICMPEQ] + " " + show(ops.get(1));
        }

        static String symbol(int op) {
            if (op >= Opcodes.IADD && op <= Opcodes.DADD) {
                return "+";
            }
            if (op >= Opcodes.ISUB && op <= Opcodes.DSUB) {
                return "-";
            }
            if (op >= Opcodes.IMUL && op <= Opcodes.DMUL) {
                return "*";
            }
            if (op >= Opcodes.IDIV && op <= Opcodes.DDIV) {
                return "/";
            }
            if (op >= Opcodes.IREM && op <= Opcodes.DREM) {
                return "%";
            }
            if (op >= Opcodes.INEG && op <= Opcodes.DNEG) {
                return "-";
            }
            switch (op) {
                case Opcodes.ISHL:
                case Opcodes.LSHL:
                    return "<<";
                case Opcodes.ISHR:
                case Opcodes.LSHR:
                    return ">>";
                case Opcodes.IUSHR:
                case Opcodes.LUSHR:
                    return ">>>";
                case Opcodes.IAND:
                case Opcodes.LAND:
                    return "&";
                case Opcodes.IOR:
                case Opcodes.LOR:
                    return "|";
                case Opcodes.IXOR:
                case Opcodes.LXOR:
                    return "^";
                default:
                    return "?";
            }
        }

        // ------------------------------------------------------------ method-level facts

        void formals() {
            boolean isStatic = (mn.access & Opcodes.ACC_STATIC) != 0;
            AbstractInsnNode first = insns.getFirst();
            int slot = 0;
            if (!isStatic) {
                m.thisVar = first == null ? "this" : local(0, first, false);
                slot = 1;
            }
            for (Type t : Type.getArgumentTypes(mn.desc)) {
                m.formals.add(first == null ? "l" + slot : local(slot, first, false));
                slot += t.getSize();
            }
        }

        /** Statement-level CFG: from each statement to the first statements its instructions reach. */
        void controlFlow() {
            int size = insns.size();
            List<List<Integer>> succ = new ArrayList<>(size);
            for (int k = 0; k < size; k++) {
                succ.add(new ArrayList<>());
            }
            for (int[] e : edges) {
                succ.get(e[0]).add(e[1]);
            }
            for (Stmt s : m.stmts) {
                int from = s.mergedStore != null ? insns.indexOf(s.mergedStore) : s.insnIndex;
                for (Stmt t : reach(succ, succ.get(from))) {
                    s.normal.add(t);
                    if (t.insnIndex <= s.insnIndex) {
                        t.loopHead = true;
                    }
                }
            }
            if (size > 0) {
                List<Integer> start = new ArrayList<>();
                start.add(0);
                Set<Stmt> entry = reach(succ, start);
                m.entry = entry.isEmpty() ? null : entry.iterator().next();
            }
            for (TryCatchBlockNode t : mn.tryCatchBlocks) {
                Stmt h = stmtOf.get(real(t.handler));
                if (h == null) {
                    continue;
                }
                int lo = insns.indexOf(t.start);
                int hi = insns.indexOf(t.end);
                for (Stmt s : m.stmts) {
                    if (s.insnIndex >= lo && s.insnIndex < hi && s != h) {
                        s.exceptional.add(h);
                    }
                }
            }
        }

        Set<Stmt> reach(List<List<Integer>> succ, List<Integer> starts) {
            LinkedHashSet<Stmt> out = new LinkedHashSet<>();
            java.util.ArrayDeque<Integer> work = new java.util.ArrayDeque<>(starts);
            Set<Integer> seen = new HashSet<>();
            while (!work.isEmpty()) {
                int k = work.poll();
                if (!seen.add(k)) {
                    continue;
                }
                AbstractInsnNode i = insns.get(k);
                Stmt t = stmtOf.get(i);
                if (t != null) {
                    out.add(t);
                    continue;
                }
                if (i.getOpcode() < 0) {
                    // labels, line numbers and frames have one successor: the next node
                    if (k + 1 < insns.size()) {
                        work.add(k + 1);
                    }
                    continue;
                }
                work.addAll(succ.get(k));
            }
            return out;
        }
    }

}
