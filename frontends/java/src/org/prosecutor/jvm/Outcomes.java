package org.prosecutor.jvm;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Which traced tests the dump keeps: a test whose outcome tracing changed (it passed in the
 * plain run and failed traced, as a test slowed past its time limit does, or the reverse) is
 * left out, since tracing must not change a test's outcome; with witnesses given, a failing
 * test that is not one of them is left out too (a test that fails for a reason other than the
 * fault under study, e.g. one that fails alone but passes in its project's usual order). Each
 * exclusion is a warning in the dump, with a count and the first names.
 */
final class Outcomes {
    private Outcomes() {}

    private static final int NAMED = 5;

    static List<Main.TestRun> keep(List<Main.TestRun> runs, Map<String, Main.TestRun> plain, List<String> witnesses) {
        List<Main.TestRun> out = new ArrayList<>();
        List<String> changed = new ArrayList<>();
        List<String> notWitness = new ArrayList<>();
        for (Main.TestRun t : runs) {
            Main.TestRun p = plain.get(t.id);
            if (p != null && !p.outcome.equals(t.outcome)) {
                changed.add(t.id + " (plain " + describe(p) + ", traced " + describe(t) + ")");
            } else if (!witnesses.isEmpty() && t.outcome.equals("fail") && !witness(t.id, witnesses)) {
                notWitness.add(t.id + " (" + describe(t) + ")");
            } else {
                out.add(t);
            }
        }
        warn(changed, "test(s) whose outcome tracing changes were left out");
        warn(notWitness, "failing test(s) that are not among the --witness tests were left out");
        return out;
    }

    private static boolean witness(String id, List<String> witnesses) {
        String cls = id.substring(0, id.indexOf("::"));
        return witnesses.contains(id) || witnesses.contains(cls);
    }

    private static String describe(Main.TestRun t) {
        return t.failureKind == null ? t.outcome : t.outcome + ": " + t.failureKind;
    }

    private static void warn(List<String> ids, String what) {
        if (ids.isEmpty()) {
            return;
        }
        String names = String.join(", ", ids.subList(0, Math.min(NAMED, ids.size())));
        Registry.R.warn(ids.size() + " " + what + ": " + names + (ids.size() > NAMED ? ", ..." : ""));
    }
}
