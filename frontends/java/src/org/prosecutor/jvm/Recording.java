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

    int steps() {
        return stmt.length;
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
