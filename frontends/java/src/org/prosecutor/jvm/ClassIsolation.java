package org.prosecutor.jvm;

import java.net.MalformedURLException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * One class loader per test class, for the classes of the class directory and of the
 * test-class directory (everything else, JUnit, libraries and the JDK, comes from the class
 * path once): each test class sees its own copy of the application's classes, so static state
 * that one test class leaves behind (a default style, a cache, a registry) does not change the
 * outcome of the next, as when each test class runs in a JVM of its own (Defects4J's Lang-41 and
 * Lang-51 fail otherwise). Both loaders of a class get the same instrumented bytes, with the same
 * statement ids ({@link Registry#transformed}).
 */
final class ClassIsolation {
    private ClassIsolation() {}

    private static final Map<String, ClassLoader> LOADERS = new HashMap<>();
    private static final Map<String, ClassLoader> PLAIN_LOADERS = new HashMap<>();

    /**
     * The test class {@code name}, loaded (not initialised) by its own loader; {@code plain}: by
     * a loader whose classes are not instrumented (the plain run).
     */
    static synchronized Class<?> testClass(String name, boolean plain) throws Main.Usage {
        ClassLoader loader = (plain ? PLAIN_LOADERS : LOADERS).computeIfAbsent(name, n -> new Isolated(urls(), plain));
        try {
            return Class.forName(name, false, loader);
        } catch (ClassNotFoundException | LinkageError e) {
            throw new Main.Usage("test class " + name + " not found on the class path (" + e + ")");
        }
    }

    private static URL[] urls() {
        List<URL> out = new ArrayList<>();
        for (Path p : new Path[] {Registry.R.testClasses, Registry.R.classes}) {
            if (p == null) {
                continue;
            }
            try {
                out.add(p.toUri().toURL());
            } catch (MalformedURLException e) {
                throw new IllegalStateException("class directory " + p + ": " + e, e);
            }
        }
        return out.toArray(new URL[0]);
    }

    /** Whether classes of {@code loader} are left as they are (a plain run's loader). */
    static boolean plain(ClassLoader loader) {
        return loader instanceof Isolated && ((Isolated) loader).plain;
    }

    /** Child-first for the two class directories, parent-first for every other class. */
    private static final class Isolated extends URLClassLoader {
        static {
            ClassLoader.registerAsParallelCapable();
        }

        final boolean plain;

        Isolated(URL[] urls, boolean plain) {
            super(plain ? "prosecutor-plain" : "prosecutor-test-class", urls, ClassLoader.getSystemClassLoader());
            this.plain = plain;
        }

        @Override
        protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            synchronized (getClassLoadingLock(name)) {
                Class<?> c = findLoadedClass(name);
                if (c == null && Registry.R.instrumented(name.replace('.', '/'))) {
                    c = findClass(name);
                }
                if (c == null) {
                    return super.loadClass(name, resolve);
                }
                if (resolve) {
                    resolveClass(c);
                }
                return c;
            }
        }
    }
}
