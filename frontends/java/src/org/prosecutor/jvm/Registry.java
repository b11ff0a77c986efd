package org.prosecutor.jvm;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.prosecutor.jvm.Bytecode.HeapSite;
import org.prosecutor.jvm.Bytecode.MethodModel;
import org.prosecutor.jvm.Bytecode.Stmt;

/**
 * Every instrumented method, statement and heap site of this JVM, numbered in load order (their
 * global ids are what the instrumented code passes to {@link Rt}), and the configuration that
 * decides which classes are application and which test code.
 */
final class Registry implements Bytecode.ClassKind {
    static final Registry R = new Registry();

    /** The synthetic root of every trace: JUnit running the test (test code, one statement). */
    static final String ROOT_METHOD = "<junit>";

    final List<MethodModel> methods = new ArrayList<>();
    final List<Stmt> stmts = new ArrayList<>();
    final List<HeapSite> sites = new ArrayList<>();
    final List<String> warnings = new ArrayList<>();
    private final Map<String, Integer> fields = new HashMap<>();
    private final java.util.Set<String> ids = new java.util.HashSet<>();
    private final Map<String, Boolean> instrumented = new HashMap<>();
    /** Instrumented bytes by class name (an empty array: not instrumented). */
    private final Map<String, byte[]> transformedBytes = new HashMap<>();

    /** How many JUnit {@code @Test(timeout = ...)} limits were removed (Instrument.dropTimeouts). */
    int droppedTimeouts;

    Path project;
    Path classes;
    Path testClasses;
    List<Path> sourceRoots = new ArrayList<>();
    /** The statement id a flip run forces, and which of its evaluations (1-based). */
    String flipStmt;
    int flipOccurrence;

    private Registry() {
        MethodModel root = new MethodModel(ROOT_METHOD, ROOT_METHOD, "()V", "test", ROOT_METHOD, ROOT_METHOD);
        Stmt s = new Stmt(0, null, -1);
        s.kind = "call";
        s.line = 1;
        s.text = "JUnit runs the test";
        root.stmts.add(s);
        root.entry = s;
        register(List.of(root));
    }

    /** Assigns global ids; the flip target (if any) is recognised here. */
    synchronized void register(List<MethodModel> ms) {
        for (MethodModel m : ms) {
            if (!ids.add(m.id)) {
                m.id = m.id + m.desc; // overloads whose parameters' simple names clash
                ids.add(m.id);
            }
            m.gid = methods.size();
            methods.add(m);
            for (Stmt s : m.stmts) {
                s.gid = stmts.size();
                s.owner = m;
                stmts.add(s);
                for (HeapSite h : s.heap) {
                    h.gid = sites.size();
                    sites.add(h);
                }
                if (flipStmt != null && flipStmt.equals(m.stmtId(s))) {
                    Rt.flipGid = s.gid;
                }
            }
        }
        Rt.grow(stmts.size(), sites.size(), methods);
    }

    /**
     * The instrumented bytes of class {@code name}, made by {@code make} the first time it is
     * loaded (null: left as it is); a class loaded again by another test class's loader
     * ({@link ClassIsolation}) gets the same bytes, hence the same statement ids.
     */
    byte[] transformed(String name, java.util.function.Supplier<byte[]> make) {
        synchronized (transformedBytes) {
            byte[] b = transformedBytes.get(name);
            if (b == null) {
                b = make.get();
                transformedBytes.put(name, b == null ? new byte[0] : b);
            }
            return b == null || b.length == 0 ? null : b.clone();
        }
    }

    synchronized void warn(String w) {
        warnings.add(w);
        System.err.println("prosecutor-java: warning: " + w);
    }

    @Override
    public synchronized boolean instrumented(String internalName) {
        return instrumented.computeIfAbsent(internalName, n -> roleOfName(n) != null);
    }

    /** "app" for a class in the class directory, "test" for one in the test-class directory. */
    String roleOfName(String internalName) {
        String rel = internalName + ".class";
        if (testClasses != null && Files.isRegularFile(testClasses.resolve(rel))) {
            return "test";
        }
        if (classes != null && Files.isRegularFile(classes.resolve(rel))) {
            return "app";
        }
        return null;
    }

    /** The role of a class from where it was loaded (a class directory), or null: not ours. */
    String roleOfLocation(Path location) {
        if (location == null) {
            return null;
        }
        if (testClasses != null && location.equals(testClasses)) {
            return "test";
        }
        if (classes != null && location.equals(classes)) {
            return "app";
        }
        return null;
    }

    @Override
    public synchronized int fieldIndex(String owner, String name) {
        return fields.computeIfAbsent(owner + "." + name, k -> fields.size());
    }

    /** The source path of a class (relative to the project when found under a source root). */
    String sourceFile(String internalName, String sourceName) {
        int slash = internalName.lastIndexOf('/');
        String pkg = slash < 0 ? "" : internalName.substring(0, slash + 1);
        String name = sourceName != null ? sourceName : internalName.substring(slash + 1) + ".java";
        String rel = pkg + name;
        for (Path root : sourceRoots) {
            Path p = root.resolve(rel);
            if (Files.isRegularFile(p)) {
                return project.relativize(p).toString().replace('\\', '/');
            }
        }
        return rel;
    }
}
