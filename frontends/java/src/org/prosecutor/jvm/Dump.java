package org.prosecutor.jvm;

import java.io.BufferedWriter;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.prosecutor.jvm.Bytecode.HeapSite;
import org.prosecutor.jvm.Bytecode.MethodModel;
import org.prosecutor.jvm.Bytecode.Stmt;

/** Writes the trace dump (docs/trace-format.md) of a run of tests. */
final class Dump {
    private final Main.Options o;
    private final List<Main.TestRun> runs;
    private final Registry r = Registry.R;
    private final List<String> warnings = new ArrayList<>();
    /** Indices (into runs) of the tests whose traces the dump keeps. */
    private final Set<Integer> kept = new HashSet<>();
    /** Coverage rows added for static initializers run in another test ({@link #coverage}). */
    private int initializerRows;

    Dump(Main.Options o, List<Main.TestRun> runs) {
        this.o = o;
        this.runs = runs;
    }

    void write() throws IOException {
        Files.createDirectories(o.out);
        choose();
        statics();
        traces();
        coverage();
        sources();
        manifest();
    }

    // ------------------------------------------------------------ which traces to keep

    /** Every failing test, and the passing tests sharing most methods with them (at most --max-passing). */
    private void choose() {
        for (int k = 0; k < runs.size(); k++) {
            Main.TestRun t = runs.get(k);
            if (t.trace != null && t.outcome.equals("fail")) {
                kept.add(k);
            }
        }
        int passing = 0;
        int dropped = 0;
        for (int k : Main.passingByRelevance(runs)) {
            if (passing < o.maxPassing && !runs.get(k).trace.compacted()) {
                kept.add(k);
                passing++;
            } else {
                dropped++;
            }
        }
        if (dropped > 0) {
            warnings.add(dropped + " passing tests keep only their coverage (--max-passing "
                    + o.maxPassing + ")");
        }
    }

    // ------------------------------------------------------------ static relations

    private void statics() throws IOException {
        try (Out stmt = out("stmt.facts"); Out method = out("method.facts");
                Out def = out("def.facts"); Out use = out("use.facts"); Out cfg = out("cfg.facts");
                Out formal = out("formal.facts"); Out thisFormal = out("this_formal.facts");
                Out actual = out("actual.facts"); Out receiver = out("receiver.facts");
                Out loop = out("loop_head.facts"); Out copy = out("copy.facts");
                Out heapAccess = out("heap_access.facts")) {
            for (MethodModel m : r.methods) {
                if (m.stmts.isEmpty() || m.entry == null) {
                    continue;
                }
                method.row(m.id, m.role, m.stmtId(m.entry));
                for (int k = 0; k < m.formals.size(); k++) {
                    formal.row(m.id, Integer.toString(k), m.formals.get(k));
                }
                if (m.thisVar != null) {
                    thisFormal.row(m.id, m.thisVar);
                }
                for (Stmt s : m.stmts) {
                    String id = m.stmtId(s);
                    stmt.row(id, m.id, s.kind, m.file, Integer.toString(Math.max(s.line, 1)), s.text);
                    for (String v : s.defs) {
                        def.row(id, v);
                    }
                    for (String v : s.uses) {
                        use.row(id, v);
                    }
                    for (Stmt t : s.normal) {
                        cfg.row(id, m.stmtId(t), "normal");
                    }
                    for (Stmt t : s.exceptional) {
                        cfg.row(id, m.stmtId(t), "exceptional");
                    }
                    for (int k = 0; k < s.actuals.size(); k++) {
                        if (s.actuals.get(k) != null) {
                            actual.row(id, Integer.toString(k), s.actuals.get(k));
                        }
                    }
                    if (s.receiver != null) {
                        receiver.row(id, s.receiver);
                    }
                    if (s.loopHead) {
                        loop.row(id);
                    }
                    if (s.copy) {
                        copy.row(id);
                    }
                    Set<String> seen = new HashSet<>();
                    for (HeapSite h : s.heap) {
                        String mode = h.def ? "def" : "use";
                        if (seen.add(h.var + "\t" + h.attr + "\t" + mode)) {
                            heapAccess.row(id, h.var, h.attr, mode);
                        }
                    }
                }
            }
        }
    }

    // ------------------------------------------------------------ trace relations

    private void traces() throws IOException {
        int truncated = 0;
        int dropped = 0;
        try (Out frame = out("frame.facts"); Out step = out("step.facts");
                Out branch = out("branch.facts"); Out heap = out("heap.facts")) {
            for (int k = 0; k < runs.size(); k++) {
                Recording t = runs.get(k).trace;
                if (!kept.contains(k)) {
                    continue;
                }
                String trace = "t" + k;
                boolean[] used = new boolean[t.frameMethod.length];
                for (int f : t.frame) {
                    used[f] = true;
                }
                for (int f = 0; f < used.length; f++) {
                    if (used[f]) {
                        String call = t.frameCall[f] < 0 ? "-" : Integer.toString(t.frameCall[f]);
                        frame.row(trace, "f" + f, r.methods.get(t.frameMethod[f]).id, call);
                    }
                }
                for (int i = 0; i < t.stmt.length; i++) {
                    String idx = Integer.toString(i);
                    step.row(trace, idx, stmtId(t.stmt[i]), "f" + t.frame[i]);
                    if (t.branch[i] >= 0) {
                        branch.row(trace, idx, Integer.toString(t.branch[i]));
                    } else if ("branch".equals(r.stmts.get(t.stmt[i]).kind)) {
                        throw new IllegalStateException("trace " + trace + " step " + i
                                + ": a branch without its outcome");
                    }
                }
                for (int i = 0; i < t.heapStep.length; i++) {
                    HeapSite h = r.sites.get(t.heapSite[i]);
                    heap.row(trace, Integer.toString(t.heapStep[i]), h.var, Long.toString(t.heapObj[i]),
                            h.def ? "def" : "use");
                }
                if (t.truncated) {
                    truncated++;
                }
                if (t.objectsDropped > 0) {
                    dropped++;
                }
            }
        }
        if (truncated > 0) {
            warnings.add(truncated + " traces were cut at the step cap (--step-cap " + o.stepCap + ")");
        }
        if (dropped > 0) {
            warnings.add(dropped + " traces touch more than " + Rt.MAX_OBJECTS + " objects: the heap"
                    + " accesses of the others are not recorded (their values flow by variable only)");
        }
    }

    private final Map<Integer, String> ids = new HashMap<>();

    private String stmtId(int gid) {
        return ids.computeIfAbsent(gid, g -> {
            Stmt s = r.stmts.get(g);
            return s.owner.stmtId(s);
        });
    }

    /**
     * Statement and edge coverage of every test run (traced or not). A class's static
     * initializer runs once per class loader (one per test class, {@link ClassIsolation}),
     * inside whichever test first loads the class; every later test that uses the class
     * depends on what it computed all the same. So each test that ran
     * code of a class also covers that class's {@code <clinit>} statements and edges, as
     * recorded by the tests that ran them ({@link #initializers}): otherwise the test that
     * happened to load the class is the only one to vouch for (or against) them, and a
     * passing suite cannot clear a constant table that the failing test alone "ran".
     */
    private void coverage() throws IOException {
        Map<String, BitSet> initStmts = new HashMap<>();
        Map<String, Set<Long>> initEdges = new HashMap<>();
        initializers(initStmts, initEdges);
        int added = 0;
        try (Out cov = out("coverage.facts"); Out edges = out("edge_coverage.facts")) {
            for (Main.TestRun run : runs) {
                Recording t = run.trace;
                if (t == null || run.outcome.equals("skip")) {
                    continue;
                }
                BitSet c = (BitSet) t.covered.clone();
                Set<Long> es = new HashSet<>(t.edgeSet());
                for (String cls : classesRun(t.covered)) {
                    BitSet init = initStmts.get(cls);
                    if (init != null) {
                        BitSet more = (BitSet) init.clone();
                        more.andNot(c);
                        added += more.cardinality();
                        c.or(init);
                        es.addAll(initEdges.get(cls));
                    }
                }
                for (int g = c.nextSetBit(0); g >= 0; g = c.nextSetBit(g + 1)) {
                    if (!r.stmts.get(g).owner.stmts.isEmpty()) {
                        cov.row(run.id, stmtId(g));
                    }
                }
                for (String e : edgeIds(es)) {
                    edges.row(run.id, e.substring(0, e.indexOf('\n')), e.substring(e.indexOf('\n') + 1));
                }
            }
        }
        initializerRows = added;
    }

    /**
     * Per class (owner's internal name), the statements and CFG edges any test ran in its static
     * initializer: the {@code <clinit>} statements (past the step cap too), and what ran in the
     * frames the initializer opened ({@link Recording#initializerExtents}: the constructors of its
     * constants, the helpers that fill its tables), which the test that loaded the class was
     * otherwise alone to run.
     */
    private void initializers(Map<String, BitSet> stmts, Map<String, Set<Long>> edges) {
        for (Main.TestRun run : runs) {
            Recording t = run.trace;
            if (t == null || run.outcome.equals("skip")) {
                continue;
            }
            t.initializerExtents();
            t.initStmts.forEach((cls, b) -> stmts.computeIfAbsent(cls, k -> new BitSet()).or(b));
            t.initEdges.forEach((cls, e) -> edges.computeIfAbsent(cls, k -> new HashSet<>()).addAll(e));
            // <clinit> statements past the step cap (no frame there; no edge either)
            BitSet c = t.covered;
            for (int g = c.nextSetBit(0); g >= 0; g = c.nextSetBit(g + 1)) {
                MethodModel m = r.stmts.get(g).owner;
                if (m.name.equals("<clinit>")) {
                    stmts.computeIfAbsent(m.owner, k -> new BitSet()).set(g);
                    edges.computeIfAbsent(m.owner, k -> new HashSet<>());
                }
            }
        }
    }

    /** The classes (internal names) of the methods whose statements {@code covered} holds. */
    private Set<String> classesRun(BitSet covered) {
        Set<String> out = new HashSet<>();
        for (int g = covered.nextSetBit(0); g >= 0; g = covered.nextSetBit(g + 1)) {
            out.add(r.stmts.get(g).owner.owner);
        }
        return out;
    }

    private Set<String> edgeIds(Set<Long> es) {
        Set<String> out = new TreeSet<>();
        for (long e : es) {
            out.add(stmtId((int) (e >>> 32)) + "\n" + stmtId((int) e));
        }
        return out;
    }

    /** Copies of the source files of the traced classes, for display. */
    private void sources() throws IOException {
        Set<String> files = new LinkedHashSet<>();
        for (MethodModel m : r.methods) {
            if (!m.stmts.isEmpty() && !m.file.equals(Registry.ROOT_METHOD)) {
                files.add(m.file);
            }
        }
        int missing = 0;
        for (String f : files) {
            Path src = r.project.resolve(f);
            if (!Files.isRegularFile(src)) {
                missing++;
                continue;
            }
            Path dst = o.out.resolve("source").resolve(f);
            Files.createDirectories(dst.getParent());
            Files.copy(src, dst, StandardCopyOption.REPLACE_EXISTING);
        }
        if (missing > 0) {
            warnings.add(missing + " source files of traced classes were not found under the source roots"
                    + " (give --source-root): their lines are shown without text");
        }
    }

    // ------------------------------------------------------------ manifest

    private void manifest() throws IOException {
        StringBuilder b = new StringBuilder();
        b.append("format = \"prosecutor-dump\"\nversion = 1\n\n[frontend]\nname = \"java\"\n")
                .append("version = \"0.1.0\"\nlanguage = \"java\"\n\n");
        rerun(b);
        int untraced = 0;
        for (int k = 0; k < runs.size(); k++) {
            Main.TestRun t = runs.get(k);
            if (t.outcome.equals("skip")) {
                continue;
            }
            b.append("[[test]]\nid = ").append(toml(t.id)).append('\n');
            if (kept.contains(k)) {
                b.append("trace = \"t").append(k).append("\"\n");
            } else if (t.trace == null) {
                untraced++;
            }
            b.append("outcome = \"").append(t.outcome).append("\"\n");
            if (t.outcome.equals("fail") && kept.contains(k)) {
                b.append("failure_step = ").append(t.trace.failureStep).append('\n');
            }
            if (t.failureKind != null) {
                b.append("failure_kind = \"").append(t.failureKind).append("\"\n");
                b.append("failure = ").append(toml(t.failure)).append('\n');
            }
            b.append("duration_ms = ").append(t.durationMs).append("\n\n");
        }
        List<String> all = new ArrayList<>(r.warnings);
        all.addAll(warnings);
        b.append("[notes]\nwarnings = [");
        for (int k = 0; k < all.size(); k++) {
            b.append(k == 0 ? "" : ", ").append(toml(all.get(k)));
        }
        b.append("]\nuntraced_tests = ").append(untraced).append('\n');
        // JUnit @Test(timeout = ...) limits lifted while tracing (the per-test limit applies)
        b.append("junit_timeouts_lifted = ").append(r.droppedTimeouts).append('\n');
        b.append("test_timeout_ms = ").append(o.testTimeoutMs).append('\n');
        // coverage rows of static initializers run in another test of the JVM (see coverage())
        b.append("static_initializer_coverage = ").append(initializerRows).append('\n');
        Files.write(o.out.resolve("manifest.toml"), b.toString().getBytes(StandardCharsets.UTF_8));
    }

    /** The command that re-runs one test with one branch evaluation forced: this JVM's own. */
    private void rerun(StringBuilder b) {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(ManagementFactory.getRuntimeMXBean().getInputArguments());
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(Main.class.getName());
        cmd.addAll(List.of("flip", "--project", o.project.toString(), "--classes", o.classes.toString(),
                "--test-classes", o.testClasses.toString()));
        for (Path p : r.sourceRoots) {
            cmd.add("--source-root");
            cmd.add(p.toString());
        }
        // No --test-timeout-ms: the core times each re-run and kills it (outcome `timeout`).
        cmd.add("--test-timeout-ms");
        cmd.add("0");
        cmd.addAll(List.of("--test", "{test}", "--stmt", "{stmt}", "--occurrence", "{occurrence}",
                "--out", "{out}"));
        b.append("[rerun]\ncommand = [");
        for (int k = 0; k < cmd.size(); k++) {
            b.append(k == 0 ? "" : ", ").append(toml(cmd.get(k)));
        }
        long max = 0;
        for (Main.TestRun t : runs) {
            max = Math.max(max, t.durationMs);
        }
        b.append("]\ncwd = ").append(toml(o.project.toString())).append('\n');
        b.append("timeout_ms = ").append(Math.max(10_000, 5 * max)).append("\n\n");
    }

    // ------------------------------------------------------------ text

    static String toml(String s) {
        return json(s);
    }

    /** A JSON (and TOML basic) string. */
    static String json(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (int k = 0; k < s.length(); k++) {
            char c = s.charAt(k);
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20 || c == 0x7f) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }

    /**
     * A facts file. The encoder replaces what UTF-8 cannot encode (an unpaired surrogate in a
     * string constant, as Lang's tests of supplementary characters have) with {@code ?}, where
     * {@code Files.newBufferedWriter}'s would throw.
     */
    private Out out(String name) throws IOException {
        return new Out(new BufferedWriter(new java.io.OutputStreamWriter(
                Files.newOutputStream(o.out.resolve(name)), StandardCharsets.UTF_8)));
    }

    /** A facts file: TAB-separated rows; TABs and newlines in a column become spaces. */
    static final class Out implements AutoCloseable {
        private final BufferedWriter w;

        Out(BufferedWriter w) {
            this.w = w;
        }

        void row(String... cols) throws IOException {
            for (int k = 0; k < cols.length; k++) {
                if (k > 0) {
                    w.write('\t');
                }
                w.write(cols[k].replace('\t', ' ').replace('\n', ' ').replace('\r', ' '));
            }
            w.write('\n');
        }

        @Override
        public void close() throws IOException {
            w.close();
        }
    }
}
