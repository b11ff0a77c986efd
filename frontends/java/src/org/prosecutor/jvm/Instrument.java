package org.prosecutor.jvm;

import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import org.objectweb.asm.ClassReader;
import org.objectweb.asm.ClassWriter;
import org.objectweb.asm.Opcodes;
import org.objectweb.asm.Type;
import org.objectweb.asm.tree.AbstractInsnNode;
import org.objectweb.asm.tree.ClassNode;
import org.objectweb.asm.tree.FieldInsnNode;
import org.objectweb.asm.tree.InsnList;
import org.objectweb.asm.tree.InsnNode;
import org.objectweb.asm.tree.JumpInsnNode;
import org.objectweb.asm.tree.LabelNode;
import org.objectweb.asm.tree.LdcInsnNode;
import org.objectweb.asm.tree.MethodInsnNode;
import org.objectweb.asm.tree.MethodNode;
import org.objectweb.asm.tree.TryCatchBlockNode;
import org.objectweb.asm.tree.VarInsnNode;
import org.objectweb.asm.tree.analysis.AnalyzerException;
import org.prosecutor.jvm.Bytecode.HeapSite;
import org.prosecutor.jvm.Bytecode.MethodModel;
import org.prosecutor.jvm.Bytecode.Stmt;

/**
 * Inserts the recorder's hooks into an application or test class (docs/frontend-java.md
 * "Instrumentation"): method entry and exit, a step before each statement, branch outcomes
 * (through which a flip run forces one evaluation), heap identities, and a handler around each
 * method body that sees exceptions leave it.
 */
final class Instrument {
    private Instrument() {}

    private static final String RT = "org/prosecutor/jvm/Rt";

    /** The instrumented class, or null to leave it as it is. */
    static byte[] transform(byte[] bytes, String role, ClassLoader loader) {
        ClassReader cr = new ClassReader(bytes);
        ClassNode cn = new ClassNode();
        cr.accept(cn, ClassReader.SKIP_FRAMES);
        if ((cn.access & Opcodes.ACC_MODULE) != 0) {
            return null;
        }
        String file = Registry.R.sourceFile(cn.name, cn.sourceFile);
        if ("test".equals(role)) {
            dropTimeouts(cn);
        }
        List<MethodNode> traced = new ArrayList<>();
        List<MethodModel> models = new ArrayList<>();
        for (MethodNode mn : cn.methods) {
            if (mn.instructions.size() == 0 || (mn.access & Opcodes.ACC_BRIDGE) != 0) {
                continue;
            }
            try {
                models.add(Bytecode.analyze(cn, mn, role, file, Registry.R));
                traced.add(mn);
            } catch (AnalyzerException | RuntimeException e) {
                Registry.R.warn("method " + cn.name.replace('/', '.') + "." + mn.name + mn.desc
                        + " is not traced: its bytecode could not be analysed (" + e + ")");
            }
        }
        if (models.isEmpty()) {
            return null;
        }
        Registry.R.register(models);
        for (int k = 0; k < traced.size(); k++) {
            method(traced.get(k), models.get(k));
        }
        ClassWriter cw = new Writer(loader);
        try {
            cn.accept(cw);
            return cw.toByteArray();
        } catch (RuntimeException e) {
            Registry.R.warn("class " + cn.name.replace('/', '.') + " is not traced: " + e);
            for (MethodModel m : models) {
                m.stmts.clear();
            }
            return null;
        }
    }

    /**
     * Removes {@code timeout} from JUnit 4 {@code @Test} annotations: it measures the test's plain
     * speed, and a traced test runs many times slower. The recorder's own per-test limit
     * (--test-timeout-ms) stops a test that hangs.
     */
    private static void dropTimeouts(ClassNode cn) {
        for (MethodNode mn : cn.methods) {
            if (mn.visibleAnnotations == null) {
                continue;
            }
            for (org.objectweb.asm.tree.AnnotationNode a : mn.visibleAnnotations) {
                if (!"Lorg/junit/Test;".equals(a.desc) || a.values == null) {
                    continue;
                }
                for (int k = 0; k + 1 < a.values.size(); k += 2) {
                    if ("timeout".equals(a.values.get(k))) {
                        Registry.R.droppedTimeouts++;
                        a.values.remove(k + 1);
                        a.values.remove(k);
                        break;
                    }
                }
            }
        }
    }

    // ------------------------------------------------------------ one method

    private static void method(MethodNode mn, MethodModel m) {
        int[] next = {mn.maxLocals};
        int fl = next[0]++;
        InsnList code = mn.instructions;
        for (Stmt s : m.stmts) {
            InsnList pre = new InsnList();
            if ("catch".equals(s.kind)) {
                pre.add(new VarInsnNode(Opcodes.ILOAD, fl));
                pre.add(call("caught", "(I)V"));
            }
            pre.add(new LdcInsnNode(s.gid));
            pre.add(new VarInsnNode(Opcodes.ILOAD, fl));
            pre.add(call("step", "(II)V"));
            if (!beforeSuper(m, s)) {
                heap(s, m, pre, next); // before super(), `this` is uninitialized: no hook may see it
            }
            branch(s, pre);
            code.insertBefore(s.anchor, pre);
            int op = s.anchor.getOpcode();
            if (op >= Opcodes.IRETURN && op <= Opcodes.RETURN) {
                InsnList leave = new InsnList();
                leave.add(new VarInsnNode(Opcodes.ILOAD, fl));
                leave.add(call("leave", "(I)V"));
                code.insertBefore(s.anchor, leave);
            }
        }
        InsnList enter = new InsnList();
        enter.add(new LdcInsnNode(m.gid));
        enter.add(call("enter", "(I)I"));
        enter.add(new VarInsnNode(Opcodes.ISTORE, fl));
        LabelNode start = new LabelNode();
        if (m.superCall != null) {
            code.insert(enter);
            code.insert(m.superCall, start);
        } else if ("<init>".equals(mn.name)) {
            code.insert(enter);
            start = null; // no super() found: leave the body without a handler
        } else {
            enter.add(start);
            code.insert(enter);
        }
        if (start != null) {
            LabelNode end = new LabelNode();
            LabelNode handler = new LabelNode();
            code.add(end);
            code.add(handler);
            code.add(new InsnNode(Opcodes.DUP));
            code.add(new VarInsnNode(Opcodes.ILOAD, fl));
            code.add(call("unwind", "(Ljava/lang/Throwable;I)V"));
            code.add(new InsnNode(Opcodes.ATHROW));
            mn.tryCatchBlocks.add(new TryCatchBlockNode(start, end, handler, null));
        }
        mn.maxLocals = next[0];
    }

    /** Whether a constructor's statement runs before its super() or this() call. */
    private static boolean beforeSuper(MethodModel m, Stmt s) {
        if (!"<init>".equals(m.name)) {
            return false;
        }
        return m.superCall == null || s.insnIndex < m.superIndex;
    }

    private static MethodInsnNode call(String name, String desc) {
        return new MethodInsnNode(Opcodes.INVOKESTATIC, RT, name, desc, false);
    }

    /** A conditional jump asks the recorder whether to jump (a flip run may answer the opposite). */
    private static void branch(Stmt s, InsnList pre) {
        if (!(s.anchor instanceof JumpInsnNode) || !"branch".equals(s.kind)) {
            return;
        }
        JumpInsnNode j = (JumpInsnNode) s.anchor;
        int op = j.getOpcode();
        pre.add(new LdcInsnNode(op));
        pre.add(new LdcInsnNode(s.gid));
        if (op >= Opcodes.IFEQ && op <= Opcodes.IFLE) {
            pre.add(call("br1", "(III)Z"));
        } else if (op >= Opcodes.IF_ICMPEQ && op <= Opcodes.IF_ICMPLE) {
            pre.add(call("br2", "(IIII)Z"));
        } else if (op == Opcodes.IF_ACMPEQ || op == Opcodes.IF_ACMPNE) {
            pre.add(call("bra", "(Ljava/lang/Object;Ljava/lang/Object;II)Z"));
        } else {
            pre.add(call("brn", "(Ljava/lang/Object;II)Z"));
        }
        j.setOpcode(Opcodes.IFNE);
    }

    // ------------------------------------------------------------ heap identities

    private static void heap(Stmt s, MethodModel m, InsnList pre, int[] next) {
        if (s.heap.isEmpty()) {
            return;
        }
        AbstractInsnNode a = s.anchor;
        int op = a.getOpcode();
        if (op == Opcodes.GETSTATIC || op == Opcodes.PUTSTATIC) {
            for (HeapSite h : s.heap) {
                pre.add(new LdcInsnNode(h.gid));
                pre.add(call("hs", "(I)V"));
            }
            return;
        }
        if (a instanceof MethodInsnNode) {
            invocation(s, (MethodInsnNode) a, pre, next);
            return;
        }
        HeapSite h = s.heap.get(0);
        if (op == Opcodes.GETFIELD || op == Opcodes.ARRAYLENGTH) {
            pre.add(new InsnNode(Opcodes.DUP)); // [obj]
        } else if (op >= Opcodes.IALOAD && op <= Opcodes.SALOAD) {
            pre.add(new InsnNode(Opcodes.DUP2)); // [arr, i]
            pre.add(new InsnNode(Opcodes.POP));
        } else if (op == Opcodes.PUTFIELD) {
            Type t = Type.getType(((FieldInsnNode) a).desc);
            int v = spill(pre, t, next);
            pre.add(new InsnNode(Opcodes.DUP));
            hook(pre, h);
            pre.add(new VarInsnNode(t.getOpcode(Opcodes.ILOAD), v));
            return;
        } else if (op >= Opcodes.IASTORE && op <= Opcodes.SASTORE) {
            Type t = arrayElement(op);
            int v = spill(pre, t, next);
            pre.add(new InsnNode(Opcodes.DUP2)); // [arr, i]
            pre.add(new InsnNode(Opcodes.POP));
            hook(pre, h);
            pre.add(new VarInsnNode(t.getOpcode(Opcodes.ILOAD), v));
            return;
        } else {
            return;
        }
        hook(pre, h);
    }

    private static void hook(InsnList pre, HeapSite h) {
        pre.add(new LdcInsnNode(h.gid));
        pre.add(call(h.def ? "hd" : "hu", "(Ljava/lang/Object;I)V"));
    }

    /** Stores the stack's top value (of type t) in a fresh local; returns the local. */
    private static int spill(InsnList pre, Type t, int[] next) {
        int v = next[0];
        next[0] += t.getSize();
        pre.add(new VarInsnNode(t.getOpcode(Opcodes.ISTORE), v));
        return v;
    }

    private static Type arrayElement(int op) {
        switch (op) {
            case Opcodes.IASTORE:
                return Type.INT_TYPE;
            case Opcodes.LASTORE:
                return Type.LONG_TYPE;
            case Opcodes.FASTORE:
                return Type.FLOAT_TYPE;
            case Opcodes.DASTORE:
                return Type.DOUBLE_TYPE;
            case Opcodes.BASTORE:
                return Type.BYTE_TYPE;
            case Opcodes.CASTORE:
                return Type.CHAR_TYPE;
            case Opcodes.SASTORE:
                return Type.SHORT_TYPE;
            default:
                return Type.getType(Object.class);
        }
    }

    /** A library call: the receiver and mutated reference arguments, spilled and reloaded. */
    private static void invocation(Stmt s, MethodInsnNode mi, InsnList pre, int[] next) {
        Type[] args = Type.getArgumentTypes(mi.desc);
        int[] slots = new int[args.length];
        for (int k = args.length - 1; k >= 0; k--) {
            slots[k] = spill(pre, args[k], next);
        }
        boolean receiver = mi.getOpcode() != Opcodes.INVOKESTATIC;
        LinkedHashSet<HeapSite> done = new LinkedHashSet<>();
        for (HeapSite h : s.heap) {
            if (receiver && h.var.equals(s.receiver)) {
                pre.add(new InsnNode(Opcodes.DUP));
                hook(pre, h);
                done.add(h);
            }
        }
        for (HeapSite h : s.heap) {
            if (done.contains(h)) {
                continue;
            }
            for (int k = 0; k < args.length; k++) {
                if (h.var.equals(s.actuals.get(k)) && args[k].getSort() >= Type.ARRAY) {
                    pre.add(new VarInsnNode(Opcodes.ALOAD, slots[k]));
                    hook(pre, h);
                    break;
                }
            }
        }
        for (int k = 0; k < args.length; k++) {
            pre.add(new VarInsnNode(args[k].getOpcode(Opcodes.ILOAD), slots[k]));
        }
    }

    // ------------------------------------------------------------ frames without loading classes

    /** Computes frames; common super classes come from class files, without loading classes. */
    private static final class Writer extends ClassWriter {
        private final ClassLoader loader;

        Writer(ClassLoader loader) {
            super(ClassWriter.COMPUTE_FRAMES | ClassWriter.COMPUTE_MAXS);
            this.loader = loader;
        }

        @Override
        protected String getCommonSuperClass(String a, String b) {
            if (a.equals(b)) {
                return a;
            }
            List<String> chainA = supers(a);
            List<String> chainB = supers(b);
            if (chainA == null || chainB == null) {
                return "java/lang/Object";
            }
            for (String x : chainA) {
                if (chainB.contains(x)) {
                    return x;
                }
            }
            return "java/lang/Object";
        }

        /** The class and its super classes, or null for an interface or an unreadable class. */
        private List<String> supers(String name) {
            List<String> out = new ArrayList<>();
            String n = name;
            while (n != null) {
                ClassReader r = read(n);
                if (r == null || (r.getAccess() & Opcodes.ACC_INTERFACE) != 0) {
                    return null;
                }
                out.add(n);
                n = r.getSuperName();
            }
            return out;
        }

        private ClassReader read(String name) {
            String res = name + ".class";
            try (InputStream in = loader != null
                    ? loader.getResourceAsStream(res)
                    : ClassLoader.getSystemResourceAsStream(res)) {
                return in == null ? null : new ClassReader(in);
            } catch (IOException e) {
                return null;
            }
        }
    }
}
