package org.prosecutor.jvm;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import org.junit.runner.Description;
import org.junit.runner.JUnitCore;
import org.junit.runner.Request;
import org.junit.runner.Result;
import org.junit.runner.notification.Failure;

/**
 * The JVM front-end's command line (docs/frontend-java.md), run with the agent:
 *
 * <pre>
 * java -javaagent:prosecutor-agent.jar -cp ... org.prosecutor.jvm.Main trace --out DUMP
 *     --project DIR --classes DIR --test-classes DIR [--source-root DIR]... [--step-cap N]
 *     [--test-timeout-ms MS] [--max-passing N] [--witness TEST]... [--plain-run on|off] TEST...
 * java ... org.prosecutor.jvm.Main flip --project DIR --classes DIR --test-classes DIR
 *     --test ID --stmt STMT --occurrence N --out RESULT.json [--test-timeout-ms MS]
 * </pre>
 *
 * TEST is a JUnit 4 test class or one of its methods ({@code Class::method}); {@code !TEST} leaves a
 * class or method out of those selected (Defects4J's known-broken tests). Each test class runs in a
 * class loader of its own ({@link ClassIsolation}): static state does not leak from one test class
 * to the next, as if each ran in a JVM of its own. Exit status: 0 when
 * the dump (or the result) is written, 2 on bad arguments or when no test is found, 1 on an
 * internal error.
 */
public final class Main {
    private Main() {}

    static final class Usage extends Exception {
        private static final long serialVersionUID = 1L;

        Usage(String m) {
            super(m);
        }
    }

    static final class Options {
        String command;
        Path out;
        Path project;
        Path classes;
        Path testClasses;
        final List<Path> sourceRoots = new ArrayList<>();
        int stepCap = 2_000_000;
        long testTimeoutMs = 10_000;
        int maxPassing = 20;
        String test;
        String stmt = "";
        int occurrence;
        final List<String> tests = new ArrayList<>();
        /** Tests whose failure witnesses the fault; other failing tests are left out (empty: all). */
        final List<String> witnesses = new ArrayList<>();
        /** Run every test once without instrumentation first, to find outcomes tracing changes. */
        boolean plainRun = true;
    }

    /** One test as run: its outcome and, when traced, its trace. */
    static final class TestRun {
        String id;
        String outcome;
        String failureKind;
        String failure;
        long durationMs;
        Recording trace;
    }

    public static void main(String[] args) {
        int code;
        try {
            code = run(parse(args));
        } catch (Usage e) {
            System.err.println("prosecutor-java: " + e.getMessage());
            code = 2;
        } catch (Throwable e) {
            System.err.println("prosecutor-java: internal error: " + e);
            e.printStackTrace();
            code = 1;
        }
        System.out.flush();
        Runtime.getRuntime().halt(code); // threads of tests that did not end must not keep the JVM
    }

    static Options parse(String[] args) throws Usage {
        Options o = new Options();
        if (args.length == 0 || !(args[0].equals("trace") || args[0].equals("flip"))) {
            throw new Usage("usage: Main trace|flip OPTIONS TEST... (docs/frontend-java.md)");
        }
        o.command = args[0];
        for (int k = 1; k < args.length; k++) {
            String a = args[k];
            if (!a.startsWith("--")) {
                o.tests.add(a);
                continue;
            }
            if (k + 1 >= args.length) {
                throw new Usage(a + " needs a value");
            }
            String v = args[++k];
            switch (a) {
                case "--out": o.out = path(v); break;
                case "--project": o.project = path(v); break;
                case "--classes": o.classes = path(v); break;
                case "--test-classes": o.testClasses = path(v); break;
                case "--source-root": o.sourceRoots.add(path(v)); break;
                case "--step-cap": o.stepCap = number(a, v); break;
                case "--test-timeout-ms": o.testTimeoutMs = number(a, v); break;
                case "--max-passing": o.maxPassing = number(a, v); break;
                case "--test": o.test = v; break;
                case "--stmt": o.stmt = v; break;
                case "--occurrence": o.occurrence = number(a, v); break;
                case "--witness": o.witnesses.add(v.replace("#", "::")); break;
                case "--plain-run": o.plainRun = !v.equals("off"); break;
                default: throw new Usage("unknown option " + a);
            }
        }
        if (o.out == null || o.classes == null || o.testClasses == null) {
            throw new Usage("--out, --classes and --test-classes are required");
        }
        if (o.project == null) {
            o.project = path(".");
        }
        if (o.command.equals("flip")) {
            if (o.test == null) {
                throw new Usage("flip needs --test ID");
            }
            o.tests.add(o.test);
        }
        if (o.tests.isEmpty()) {
            throw new Usage("no test given (a JUnit test class, or Class::method)");
        }
        return o;
    }

    private static Path path(String v) {
        Path p = Paths.get(v).toAbsolutePath().normalize();
        try {
            return p.toRealPath();
        } catch (IOException e) {
            return p;
        }
    }

    private static int number(String flag, String v) throws Usage {
        try {
            return Integer.parseInt(v);
        } catch (NumberFormatException e) {
            throw new Usage(flag + ": " + v + " is not a number");
        }
    }

    static int run(Options o) throws Usage, IOException {
        Registry r = Registry.R;
        r.project = o.project;
        r.classes = o.classes;
        r.testClasses = o.testClasses;
        r.sourceRoots.addAll(o.sourceRoots.isEmpty() ? List.of(o.project) : o.sourceRoots);
        if (o.command.equals("flip")) {
            r.flipStmt = o.stmt.isEmpty() ? null : o.stmt;
            Rt.flipOccurrence = o.occurrence;
        }
        Agent.configured = true;
        List<Selected> tests = select(o.tests, false);
        if (o.command.equals("flip")) {
            return flip(o, tests.get(0));
        }
        Map<String, TestRun> plain = o.plainRun ? plainRun(o) : Map.of();
        List<TestRun> runs = new ArrayList<>();
        for (int k = 0; k < tests.size(); k++) {
            Selected t = tests.get(k);
            TestRun run = runOne(t, Rt.TRACE, o);
            runs.add(run);
            retain(runs, o.maxPassing);
            System.err.printf("prosecutor-java: [%d/%d] %s %s (%d ms, %d steps)%n", k + 1, tests.size(),
                    run.id, run.outcome, run.durationMs, run.trace == null ? 0 : run.trace.steps());
        }
        new Dump(o, Outcomes.keep(runs, plain, o.witnesses)).write();
        return 0;
    }

    /**
     * Indices (into {@code runs}) of the passing tests that have a trace, in the order their
     * traces are kept: most methods shared with the failing traces, then fewer steps, then run
     * order. The dump keeps the first --max-passing ({@link Dump}); the recorder compacts the
     * others as soon as they lose their place ({@link #retain}).
     */
    static List<Integer> passingByRelevance(List<TestRun> runs) {
        java.util.Set<Integer> failing = new java.util.HashSet<>();
        List<Integer> passing = new ArrayList<>();
        for (int k = 0; k < runs.size(); k++) {
            TestRun r = runs.get(k);
            if (r.trace == null) {
                continue;
            }
            if (r.outcome.equals("fail")) {
                failing.addAll(r.trace.methods());
            } else if (r.outcome.equals("pass")) {
                passing.add(k);
            }
        }
        int[] shared = new int[runs.size()];
        for (int k : passing) {
            java.util.Set<Integer> m = runs.get(k).trace.methods();
            m.retainAll(failing);
            shared[k] = m.size();
        }
        passing.sort(java.util.Comparator.<Integer>comparingInt(k -> -shared[k])
                .thenComparingInt(k -> runs.get(k).trace.steps()));
        return passing;
    }

    /**
     * Compacts the passing traces beyond the first {@code maxPassing} of
     * {@link #passingByRelevance} to their coverage, so that memory stays bounded. The same
     * choice as the dump's when the failing tests run first; otherwise a passing test compacted
     * before a later failing test ran is not reconsidered.
     */
    static void retain(List<TestRun> runs, int maxPassing) {
        int held = 0;
        for (int k : passingByRelevance(runs)) {
            Recording t = runs.get(k).trace;
            if (!t.compacted() && ++held > maxPassing) {
                t.compact();
            }
        }
    }

    /** Every selected test run once with classes that are not instrumented: id -> its run. */
    static Map<String, TestRun> plainRun(Options o) throws Usage {
        List<Selected> tests = select(o.tests, true);
        Map<String, TestRun> out = new HashMap<>();
        long start = System.nanoTime();
        for (Selected t : tests) {
            out.put(t.id, runOne(t, Rt.OFF, o));
        }
        System.err.printf("prosecutor-java: plain run: %d tests, %d failing (%d ms)%n", out.size(),
                out.values().stream().filter(r -> r.outcome.equals("fail")).count(),
                (System.nanoTime() - start) / 1_000_000);
        return out;
    }

    // ------------------------------------------------------------ tests

    static final class Selected {
        final Class<?> cls;
        final Description leaf;
        final String id;

        Selected(Class<?> cls, Description leaf) {
            this.cls = cls;
            this.leaf = leaf;
            this.id = cls.getName() + "::" + leaf.getMethodName();
        }
    }

    /**
     * The test methods named by the arguments, in order, each once, minus those named with a
     * leading {@code !} (a class or a method).
     */
    static List<Selected> select(List<String> ids, boolean plain) throws Usage {
        List<Selected> out = new ArrayList<>();
        LinkedHashSet<String> seen = new LinkedHashSet<>();
        java.util.Set<String> excluded = new java.util.HashSet<>();
        for (String id : ids) {
            if (id.startsWith("!")) {
                excluded.add(id.substring(1).replace("#", "::"));
            }
        }
        for (String id : ids) {
            if (id.startsWith("!")) {
                continue;
            }
            String[] parts = id.split("::|#", 2);
            Class<?> cls = ClassIsolation.testClass(parts[0], plain);
            List<Description> leaves = new ArrayList<>();
            leaves(Request.aClass(cls).getRunner().getDescription(), leaves);
            boolean named = false;
            for (Description d : leaves) {
                if (d.getMethodName() == null || parts.length == 2 && !d.getMethodName().equals(parts[1])) {
                    continue;
                }
                named = true;
                Selected s = new Selected(cls, d);
                if (!excluded.contains(s.id) && !excluded.contains(parts[0]) && seen.add(s.id)) {
                    out.add(s);
                }
            }
            if (!named && parts.length == 2) {
                throw new Usage("test " + id + ": no test method " + parts[1] + " in " + parts[0]);
            }
        }
        if (out.isEmpty()) {
            throw new Usage("no test found in " + String.join(" ", ids));
        }
        return out;
    }

    private static void leaves(Description d, List<Description> out) {
        if (d.isTest()) {
            out.add(d);
        }
        for (Description c : d.getChildren()) {
            leaves(c, out);
        }
    }

    /**
     * The test thread's stack: room for {@link Rt#MAX_DEPTH} instrumented frames with library
     * frames between them, so that the recorder's limit, not the JVM's, ends a recursion without
     * end (the JVM's default stack is 1 MB on 64-bit Linux; this is reserved, not touched).
     */
    static final long TEST_STACK_BYTES = 16L << 20;

    /** Runs one test in a thread of its own, under the time limit; records it in {@code mode}. */
    static TestRun runOne(Selected t, int mode, Options o) {
        Request request = Request.aClass(t.cls).filterWith(t.leaf);
        Result[] result = new Result[1];
        Thread worker = new Thread(null, () -> result[0] = new JUnitCore().run(request), "prosecutor-test",
                TEST_STACK_BYTES);
        worker.setDaemon(true);
        worker.setContextClassLoader(t.cls.getClassLoader());
        long start = System.nanoTime();
        Rt.begin(mode, o.stepCap, worker);
        worker.start();
        boolean stopped = waitFor(worker, o.testTimeoutMs);
        long ms = (System.nanoTime() - start) / 1_000_000;
        TestRun run = new TestRun();
        run.id = t.id;
        run.durationMs = ms;
        Failure f = result[0] == null || result[0].getFailures().isEmpty() ? null : result[0].getFailures().get(0);
        if (mode == Rt.TRACE) {
            run.trace = Recording.take(f == null ? null : f.getException());
            if (run.trace == null) {
                Registry.R.warn("test " + t.id + " is kept untraced: its trace could not be copied out of the "
                        + "recorder (out of memory; raise the heap with --jvm-arg=-Xmx...)");
            }
        }
        Rt.end();
        if (result[0] == null) {
            run.outcome = "fail";
            run.failureKind = "timeout";
            run.failure = "stopped after " + o.testTimeoutMs + " ms (it did not end when asked to)";
        } else if (f == null) {
            run.outcome = result[0].getRunCount() == 0 || result[0].getIgnoreCount() > 0
                    || result[0].getAssumptionFailureCount() > 0 ? "skip" : "pass";
        } else {
            Throwable e = f.getException();
            run.outcome = "fail";
            run.failureKind = stopped || e instanceof Rt.Stop
                    || e.getClass().getName().equals("org.junit.runners.model.TestTimedOutException")
                    ? "timeout" : e instanceof AssertionError ? "assertion" : "exception";
            run.failure = firstLine(String.valueOf(e));
        }
        return run;
    }

    /** Waits for the test; past the limit, asks it to stop, then forces it. True if it was stopped. */
    @SuppressWarnings("deprecation")
    static boolean waitFor(Thread worker, long limitMs) {
        try {
            worker.join(limitMs); // 0: no limit (a flip run: the core kills it)
            if (!worker.isAlive()) {
                return false;
            }
            Rt.requestStop("test stopped: it ran past its time limit of " + limitMs + " ms");
            worker.interrupt();
            worker.join(2000);
            if (worker.isAlive()) {
                try {
                    worker.stop();
                } catch (UnsupportedOperationException e) {
                    // JDK 20+: the thread keeps running; it is stale and its hooks throw Stop
                }
                worker.join(1000);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return true;
    }

    static String firstLine(String s) {
        int nl = s.indexOf('\n');
        s = nl < 0 ? s : s.substring(0, nl);
        return s.length() > 500 ? s.substring(0, 497) + "..." : s;
    }

    // ------------------------------------------------------------ flips

    static int flip(Options o, Selected t) throws IOException {
        TestRun run = runOne(t, Rt.FLIP, o);
        boolean pass = run.outcome.equals("pass");
        String detail = !pass ? run.failureKind + ": " + run.failure
                : Rt.thrown ? "passed by an exception: the call that held the flip threw it into the test"
                : "passed";
        if (!o.stmt.isEmpty() && !Rt.flipped) {
            detail = "evaluation " + o.occurrence + " of " + o.stmt + " was not reached (reached "
                    + Rt.flipCount + "); " + detail;
        }
        String json = "{\"outcome\": \"" + (pass ? "pass" : "fail") + "\", \"flipped\": " + Rt.flipped
                + ", \"thrown\": " + Rt.thrown
                + ", \"detail\": " + Dump.json(detail) + "}\n";
        Files.write(o.out, json.getBytes(StandardCharsets.UTF_8));
        return 0;
    }
}
