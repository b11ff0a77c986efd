package org.prosecutor.jvm;

import java.util.Arrays;
import java.util.BitSet;

/** One test's recorded trace, copied out of {@link Rt} when the test ends. */
final class Recording {
    int[] stmt;
    int[] frame;
    byte[] branch;
    int[] frameMethod;
    int[] frameCall;
    int[] heapStep;
    int[] heapSite;
    long[] heapObj;
    BitSet covered;
    boolean truncated;
    int objectsDropped;
    int failureStep;

    /** The CFG edges between consecutive steps of a frame (gid pairs): computed once, by {@link #edgeSet}. */
    private java.util.Set<Long> edges;
    private int compactedSteps = -1;

    int steps() {
        return compactedSteps >= 0 ? compactedSteps : stmt.length;
    }

    boolean compacted() {
        return compactedSteps >= 0;
    }

    private java.util.Set<Integer> methodSet;

    /** The distinct methods with a recorded frame (a copy; computed once, kept by {@link #compact}). */
    java.util.Set<Integer> methods() {
        if (methodSet == null) {
            methodSet = new java.util.HashSet<>();
            for (int m : frameMethod) {
                methodSet.add(m);
            }
        }
        return new java.util.HashSet<>(methodSet);
    }

    /** The CFG edges between consecutive steps of one frame, as {@code prev << 32 | next} gids (not to be modified). */
    java.util.Set<Long> edgeSet() {
        if (edges != null) {
            return edges;
        }
        java.util.Map<Integer, Integer> lastInFrame = new java.util.HashMap<>();
        java.util.Set<Long> out = new java.util.HashSet<>();
        for (int i = 0; i < stmt.length; i++) {
            Integer prev = lastInFrame.put(frame[i], stmt[i]);
            if (prev != null && isEdge(prev, stmt[i])) {
                out.add((long) prev << 32 | stmt[i]);
            }
        }
        edges = out;   // (the dump writer asks twice: static initializers, then each test's rows)
        return out;
    }

    private static boolean isEdge(int prev, int next) {
        Bytecode.Stmt a = Registry.R.stmts.get(prev);
        Bytecode.Stmt b = Registry.R.stmts.get(next);
        return a.normal.contains(b) || a.exceptional.contains(b);
    }

    /**
     * Per class whose static initializer ran in this test (owner's internal name): the statements
     * and CFG edges of the steps that ran inside it, in its {@code <clinit>} frame or in any frame
     * opened below that one (a constructor of a constant, a helper filling a table), also on
     * behalf of the initializers around it. Computed once from the frames (kept by
     * {@link #compact}); steps past the step cap have no frame and are not counted.
     */
    java.util.Map<String, BitSet> initStmts;
    java.util.Map<String, java.util.Set<Long>> initEdges;

    void initializerExtents() {
        if (initStmts != null) {
            return;
        }
        initStmts = new java.util.HashMap<>();
        initEdges = new java.util.HashMap<>();
        // frames are numbered in the order they opened, a caller's before its callees'
        int[] init = new int[frameMethod.length];   // innermost initializer frame around f, or -1
        for (int f = 0; f < frameMethod.length; f++) {
            int caller = frameCall[f] < 0 ? -1 : frame[frameCall[f]];
            init[f] = Registry.R.methods.get(frameMethod[f]).name.equals("<clinit>") ? f
                    : caller < 0 ? -1 : init[caller];
        }
        java.util.Map<Integer, Integer> lastInFrame = new java.util.HashMap<>();
        for (int i = 0; i < stmt.length; i++) {
            if (init[frame[i]] < 0) {
                continue;   // (a frame is inside an initializer or not for all its steps)
            }
            Integer prev = lastInFrame.put(frame[i], stmt[i]);
            boolean edge = prev != null && isEdge(prev, stmt[i]);
            for (int f = init[frame[i]]; f >= 0; f = outer(f, init)) {
                String cls = Registry.R.methods.get(frameMethod[f]).owner;
                initStmts.computeIfAbsent(cls, k -> new BitSet()).set(stmt[i]);
                java.util.Set<Long> es = initEdges.computeIfAbsent(cls, k -> new java.util.HashSet<>());
                if (edge) {
                    es.add((long) prev << 32 | stmt[i]);
                }
            }
        }
    }

    /** The initializer frame around the initializer frame {@code f}'s caller, or -1. */
    private int outer(int f, int[] init) {
        return frameCall[f] < 0 ? -1 : init[frame[frameCall[f]]];
    }

    /**
     * Keeps only what a test that is not kept in full needs (coverage, edge coverage, methods,
     * step count) and lets the steps, frames and heap rows go: the dump holds at most
     * --max-passing passing traces, and a suite of long tests does not fit in the heap otherwise.
     */
    void compact() {
        methods();
        edgeSet();   // (computed now: the steps go below)
        initializerExtents();
        compactedSteps = stmt.length;
        frameMethod = null;
        stmt = null;
        frame = null;
        branch = null;
        frameCall = null;
        heapStep = null;
        heapSite = null;
        heapObj = null;
    }

    /**
     * The test's recording, or null when it cannot be copied even after a collection (a test
     * that filled the heap, such as Defects4J's Lang-43, may leave no room for the copy).
     */
    static Recording take(Throwable failure) {
        for (int attempt = 0; attempt < 2; attempt++) {
            try {
                return copy(failure);
            } catch (OutOfMemoryError e) {
                System.gc();
            }
        }
        return null;
    }

    private static Recording copy(Throwable failure) {
        synchronized (Rt.class) {
            Recording r = new Recording();
            int n = Math.min(Rt.nsteps, Rt.cap);
            r.stmt = Arrays.copyOf(Rt.stepStmt, n);
            r.frame = Arrays.copyOf(Rt.stepFrame, n);
            r.branch = Arrays.copyOf(Rt.stepBranch, n);
            r.frameMethod = Arrays.copyOf(Rt.frameMethod, Rt.nframes);
            r.frameCall = Arrays.copyOf(Rt.frameCall, Rt.nframes);
            r.heapStep = Arrays.copyOf(Rt.heapStep, Rt.nheap);
            r.heapSite = Arrays.copyOf(Rt.heapSite, Rt.nheap);
            r.heapObj = Arrays.copyOf(Rt.heapObj, Rt.nheap);
            r.covered = (BitSet) Rt.covered.clone();
            r.truncated = Rt.truncated;
            r.objectsDropped = Rt.objectsDropped;
            int s = failure == null ? -1 : Rt.failureStep(failure);
            r.failureStep = s >= 0 && s < n ? s : n - 1;
            return r;
        }
    }
}
