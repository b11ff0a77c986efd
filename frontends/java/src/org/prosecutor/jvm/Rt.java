package org.prosecutor.jvm;

import java.util.Arrays;
import java.util.BitSet;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.Set;

/**
 * The recorder the instrumented code calls (docs/frontend-java.md "Recording"). One test is
 * recorded at a time; frames are passed explicitly (each instrumented method keeps its frame
 * id in a local), so a step is always recorded in the frame that ran it, whatever library code
 * sits between. Threads that ran a test that was stopped are not recorded again; once a new
 * test records, their hooks throw {@link Stop} so that they end.
 */
public final class Rt {
    private Rt() {}

    /** Thrown into a test that ran past its time limit, and into threads of abandoned tests. */
    public static final class Stop extends Error {
        private static final long serialVersionUID = 1L;

        Stop(String why) {
            super(why);
        }
    }

    static final int OFF = 0;
    static final int TRACE = 1;
    static final int FLIP = 2;

    static volatile int mode = OFF;
    static volatile boolean stop;
    static volatile String stopReason = "";
    /** The thread that runs the current test: the only one recorded (the hooks are not locked). */
    private static volatile Thread owner;
    static final Set<Thread> stale = java.util.concurrent.ConcurrentHashMap.newKeySet();

    // steps
    static int cap = 2_000_000;
    static int[] stepStmt = new int[1 << 12];
    static int[] stepFrame = new int[1 << 12];
    static byte[] stepBranch = new byte[1 << 12];
    static int nsteps;
    static boolean truncated;
    static final BitSet covered = new BitSet();

    // frames
    static int[] frameMethod = new int[256];
    static int[] frameCall = new int[256];
    static int[] frameLast = new int[256];
    static int nframes;
    private static int[] stack = new int[256];
    private static int depth;

    // heap rows
    static int[] heapStep = new int[256];
    static int[] heapSite = new int[256];
    static long[] heapObj = new long[256];
    static int nheap;
    private static final IdentityHashMap<Object, Integer> ids = new IdentityHashMap<>();
    private static final Map<Throwable, Integer> firstSeen = new IdentityHashMap<>();

    // statement and site tables (global ids -> data), grown by the registry
    static int[] siteStmt = new int[0];
    static long[] siteField = new long[0];
    static boolean[] siteStatic = new boolean[0];

    // flips
    static volatile int flipGid = -1;
    static int flipOccurrence;
    static int flipCount;
    static boolean flipped;
    /**
     * Whether the outermost call into application code that was open at the flip ended by an
     * exception, which then reached test code: a flip run that passes this way passed because
     * the test accepted an exception, which any branch that throws one satisfies
     * (docs/model.md, "A pass by a thrown exception").
     */
    static boolean thrown;
    /** The depth ({@link #calls}) of the outermost application frame open at the flip, or -1. */
    private static int flipBase = -1;
    /** Per method id: whether it is application code (else test code or the root). */
    static boolean[] methodApp = new boolean[0];
    /** Per open call (by depth): whether its method is application code. */
    private static boolean[] callApp = new boolean[256];

    static synchronized void grow(int nstmts, int nsites, java.util.List<Bytecode.MethodModel> methods) {
        int had = methodApp.length;
        if (methods.size() > had) {
            methodApp = Arrays.copyOf(methodApp, methods.size());
            for (int k = had; k < methods.size(); k++) {
                methodApp[k] = "app".equals(methods.get(k).role);
            }
        }
        int old = siteStmt.length;
        if (nsites > old) {
            siteStmt = Arrays.copyOf(siteStmt, nsites);
            siteField = Arrays.copyOf(siteField, nsites);
            siteStatic = Arrays.copyOf(siteStatic, nsites);
            for (int k = old; k < nsites; k++) {
                Bytecode.HeapSite h = Registry.R.sites.get(k);
                siteStmt[k] = h.stmt.gid;
                siteField[k] = h.field;
                siteStatic[k] = h.isStatic;
            }
        }
    }

    // ------------------------------------------------------------ test lifecycle (Main)

    /** Starts recording a test: step 0 is the synthetic root statement in frame 0. */
    static synchronized void begin(int newMode, int stepCap, Thread testThread) {
        cap = Math.max(stepCap, 1);
        nsteps = 0;
        nframes = 0;
        depth = 0;
        nheap = 0;
        calls = 0;
        truncated = false;
        covered.clear();
        ids.clear();
        java.util.Arrays.fill(recent, null);
        objectsDropped = 0;
        firstSeen.clear();
        flipCount = 0;
        flipped = false;
        thrown = false;
        flipBase = -1;
        stop = false;
        owner = testThread;
        int root = newFrame(0, -1);
        stack[depth++] = root;
        if (newMode == TRACE) {
            append(0, root);
        }
        mode = newMode;
    }

    /** Stops recording; a test thread still alive is stale from now on (its hooks throw Stop). */
    static synchronized void end() {
        mode = OFF;
        Thread t = owner;
        if (t != null && t.isAlive()) {
            stale.add(t);
        }
        owner = null;
        ids.clear();
        java.util.Arrays.fill(recent, null);
    }

    static synchronized void requestStop(String why) {
        stopReason = why;
        stop = true;
    }

    /** The step where an exception was first seen leaving an instrumented frame, or -1. */
    static int failureStep(Throwable t) {
        for (Throwable x = t; x != null; x = x.getCause()) {
            Integer s = firstSeen.get(x);
            if (s != null) {
                return s;
            }
            if (x.getCause() == x) {
                break;
            }
        }
        return -1;
    }

    // ------------------------------------------------------------ hooks

    /** Whether the calling thread is the test's (other threads are not recorded). */
    private static boolean accept() {
        Thread t = Thread.currentThread();
        if (t != owner) {
            if (stale.contains(t)) {
                throw new Stop("a test that was stopped is still running in thread " + t.getName());
            }
            return false;
        }
        if (stop) {
            throw new Stop(stopReason);
        }
        return true;
    }

    /**
     * Instrumented frames a test may have open at once: past it, a call throws
     * StackOverflowError. The JVM's own limit depends on the JIT (compiled frames are smaller), so
     * a test that recurses without end would fail at a different depth in every run, and a flip
     * run could not count a branch's evaluations as its traced run did; this limit is the same in
     * every run, and below the JVM's on the test thread's stack (Main.TEST_STACK_BYTES).
     */
    static final int MAX_DEPTH = 10_000;

    /** Open instrumented frames of the test (tracked in every mode, past the step cap too). */
    private static int calls;
    private static int[] frameCalls = new int[256];

    /**
     * Opens a frame. Returns its id (>= 0) when it is recorded, else {@code -(depth + 2)} so that
     * leave/unwind/caught can restore the depth, or -1 when no test runs.
     */
    public static int enter(int method) {
        int m = mode; // (volatile: read once per call)
        if (m == OFF || !accept()) {
            return -1;
        }
        if (calls >= MAX_DEPTH) {
            throw new StackOverflowError("more than " + MAX_DEPTH + " nested calls of traced methods"
                    + " (the recorder's limit, the same in every run)");
        }
        int at = calls++;
        if (m == FLIP) {
            if (at == callApp.length) {
                callApp = Arrays.copyOf(callApp, at * 2);
            }
            callApp[at] = method < methodApp.length && methodApp[method];
        }
        if (m != TRACE || nsteps >= cap || depth == 0) {
            return -(at + 2);
        }
        int caller = stack[depth - 1];
        int call = frameLast[caller];
        if (call < 0) {
            return -(at + 2);
        }
        int f = newFrame(method, call);
        if (f == frameCalls.length) {
            frameCalls = Arrays.copyOf(frameCalls, f * 2);
        }
        frameCalls[f] = at;
        if (depth == stack.length) {
            stack = Arrays.copyOf(stack, depth * 2);
        }
        stack[depth++] = f;
        return f;
    }

    /** Restores the count of open frames to that of {@code frame}'s caller (+1: the frame itself). */
    private static void restore(int frame, int plus) {
        if (frame >= 0) {
            calls = frameCalls[frame] + plus;
        } else if (frame <= -2) {
            calls = -frame - 2 + plus;
        }
    }

    public static void step(int stmt, int frame) {
        if (mode == OFF || !accept()) {
            return;
        }
        if (mode != TRACE) {
            return;
        }
        if (nsteps >= cap) {
            truncated = true;
            covered.set(stmt);
            return;
        }
        if (frame < 0 || !top(frame)) {
            return;
        }
        append(stmt, frame);
    }

    public static void leave(int frame) {
        if (mode == OFF || Thread.currentThread() != owner) {
            return;
        }
        restore(frame, 0);
        if (calls == flipBase) {
            flipBase = -1; // the call that held the flip returned
        }
        if (mode == TRACE && frame >= 0 && top(frame)) {
            depth--;
        }
    }

    public static void unwind(Throwable t, int frame) {
        if (mode == OFF || Thread.currentThread() != owner) {
            return;
        }
        restore(frame, 0);
        if (calls == flipBase) {
            flipBase = -1;
            thrown = true; // the call that held the flip threw into test code
        }
        if (mode != TRACE || frame < 0) {
            return;
        }
        if (!firstSeen.containsKey(t) && frameLast[frame] >= 0) {
            firstSeen.put(t, frameLast[frame]);
        }
        if (top(frame)) {
            depth--;
        }
    }

    public static void caught(int frame) {
        if (mode == OFF || Thread.currentThread() != owner) {
            return;
        }
        restore(frame, 1);
        if (mode == TRACE && frame >= 0) {
            top(frame);
        }
    }

    public static boolean br1(int v, int op, int stmt) {
        boolean taken;
        switch (op) {
            case 153: taken = v == 0; break; // IFEQ
            case 154: taken = v != 0; break; // IFNE
            case 155: taken = v < 0; break; // IFLT
            case 156: taken = v >= 0; break; // IFGE
            case 157: taken = v > 0; break; // IFGT
            default: taken = v <= 0; break; // IFLE
        }
        return outcome(stmt, taken);
    }

    public static boolean br2(int a, int b, int op, int stmt) {
        boolean taken;
        switch (op) {
            case 159: taken = a == b; break; // IF_ICMPEQ
            case 160: taken = a != b; break; // IF_ICMPNE
            case 161: taken = a < b; break; // IF_ICMPLT
            case 162: taken = a >= b; break; // IF_ICMPGE
            case 163: taken = a > b; break; // IF_ICMPGT
            default: taken = a <= b; break; // IF_ICMPLE
        }
        return outcome(stmt, taken);
    }

    public static boolean bra(Object a, Object b, int op, int stmt) {
        return outcome(stmt, op == 165 ? a == b : a != b); // IF_ACMPEQ / IF_ACMPNE
    }

    public static boolean brn(Object a, int op, int stmt) {
        return outcome(stmt, op == 198 ? a == null : a != null); // IFNULL / IFNONNULL
    }

    /** Records a branch outcome (1 = the jump is taken) and applies a flip. */
    private static boolean outcome(int stmt, boolean taken) {
        if (mode == OFF || Thread.currentThread() != owner) {
            return taken;
        }
        if (stmt == flipGid && ++flipCount == flipOccurrence) {
            taken = !taken;
            flipped = true;
            flipBase = outermostApp();
        }
        if (mode == TRACE && nsteps > 0 && nsteps <= cap && stepStmt[nsteps - 1] == stmt
                && stepBranch[nsteps - 1] < 0) {
            stepBranch[nsteps - 1] = (byte) (taken ? 1 : 0);
        }
        return taken;
    }

    /** The depth of the outermost frame of the application frames on top of the stack, or -1. */
    private static int outermostApp() {
        int i = calls - 1;
        if (i < 0 || i >= callApp.length || !callApp[i]) {
            return -1;
        }
        while (i > 0 && callApp[i - 1]) {
            i--;
        }
        return i;
    }

    /** A heap use of the object {@code o} at a site of the statement just recorded. */
    public static void hu(Object o, int site) {
        heap(o, site);
    }

    public static void hd(Object o, int site) {
        heap(o, site);
    }

    /** A static field's cell. */
    public static void hs(int site) {
        heap(null, site);
    }

    private static void heap(Object o, int site) {
        if (mode != TRACE || nsteps == 0 || nsteps > cap || Thread.currentThread() != owner) {
            return;
        }
        if (site >= siteStmt.length || stepStmt[nsteps - 1] != siteStmt[site]) {
            return;
        }
        long cell;
        if (siteStatic[site]) {
            cell = (1L << 60) + siteField[site];
        } else if (o == null) {
            return;
        } else {
            int id = idOf(o);
            if (id < 0) {
                return;
            }
            cell = siteField[site] < 0 ? id : (1L << 40) + ((long) id << 16) + siteField[site];
        }
        if (nheap == heapStep.length) {
            heapStep = Arrays.copyOf(heapStep, nheap * 2);
            heapSite = Arrays.copyOf(heapSite, nheap * 2);
            heapObj = Arrays.copyOf(heapObj, nheap * 2);
        }
        heapStep[nheap] = nsteps - 1;
        heapSite[nheap] = site;
        heapObj[nheap] = cell;
        nheap++;
    }

    /**
     * Objects given an identity per test, at most this many: the JVM runs with identity hash
     * codes all equal (-XX:hashCode=2, so that a flip run iterates identity-hashed sets in the
     * traced run's order), which makes each lookup in the identity map linear in its size.
     */
    static final int MAX_OBJECTS = 20_000;
    static int objectsDropped;
    private static final Object[] recent = new Object[8];
    private static final int[] recentId = new int[8];
    private static int recentNext;

    /** The object's identity in this test (1, 2, ...), or -1 past MAX_OBJECTS. */
    private static int idOf(Object o) {
        for (int k = 0; k < recent.length; k++) {
            if (recent[k] == o) {
                return recentId[k];
            }
        }
        Integer id = ids.get(o);
        if (id == null) {
            if (ids.size() >= MAX_OBJECTS) {
                objectsDropped++;
                return -1;
            }
            id = ids.size() + 1;
            ids.put(o, id);
        }
        recent[recentNext] = o;
        recentId[recentNext] = id;
        recentNext = (recentNext + 1) % recent.length;
        return id;
    }

    // ------------------------------------------------------------ internals

    private static int newFrame(int method, int call) {
        if (nframes == frameMethod.length) {
            int n = nframes * 2;
            frameMethod = Arrays.copyOf(frameMethod, n);
            frameCall = Arrays.copyOf(frameCall, n);
            frameLast = Arrays.copyOf(frameLast, n);
        }
        frameMethod[nframes] = method;
        frameCall[nframes] = call;
        frameLast[nframes] = -1;
        return nframes++;
    }

    /** Makes {@code frame} the top of the stack (frames above it were left); false if not on it. */
    private static boolean top(int frame) {
        if (depth > 0 && stack[depth - 1] == frame) {
            return true;
        }
        for (int k = depth - 2; k >= 0; k--) {
            if (stack[k] == frame) {
                depth = k + 1;
                return true;
            }
        }
        return false;
    }

    private static void append(int stmt, int frame) {
        if (nsteps == stepStmt.length) {
            int n = nsteps * 2;
            stepStmt = Arrays.copyOf(stepStmt, n);
            stepFrame = Arrays.copyOf(stepFrame, n);
            stepBranch = Arrays.copyOf(stepBranch, n);
        }
        stepStmt[nsteps] = stmt;
        stepFrame[nsteps] = frame;
        stepBranch[nsteps] = -1;
        frameLast[frame] = nsteps;
        covered.set(stmt);
        nsteps++;
    }
}
