package org.prosecutor.jvm;

import java.lang.instrument.ClassFileTransformer;
import java.lang.instrument.Instrumentation;
import java.net.URISyntaxException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.security.CodeSource;
import java.security.ProtectionDomain;

/**
 * The Java agent (`-javaagent:prosecutor-agent.jar`): instruments the classes loaded from the
 * application's class directory (as `app` code) and from its test-class directory (as `test`
 * code) once {@link Main} has configured the {@link Registry}; every other class (the JDK,
 * JUnit, libraries, this agent) is left as it is.
 */
public final class Agent {
    private Agent() {}

    static volatile boolean configured;

    public static void premain(String args, Instrumentation inst) {
        inst.addTransformer(new Transformer());
    }

    private static final class Transformer implements ClassFileTransformer {
        @Override
        public byte[] transform(ClassLoader loader, String name, Class<?> redefined,
                ProtectionDomain pd, byte[] bytes) {
            if (!configured || name == null || redefined != null || name.startsWith("org/prosecutor/jvm/")
                    || ClassIsolation.plain(loader)) {
                return null;
            }
            String role = Registry.R.roleOfLocation(location(pd));
            if (role == null) {
                return null;
            }
            return Registry.R.transformed(name, () -> {
                try {
                    return Instrument.transform(bytes, role, loader);
                } catch (Throwable t) {
                    Registry.R.warn("class " + name.replace('/', '.') + " is not traced: " + t);
                    return null;
                }
            });
        }

        private static Path location(ProtectionDomain pd) {
            CodeSource cs = pd == null ? null : pd.getCodeSource();
            if (cs == null || cs.getLocation() == null) {
                return null;
            }
            try {
                return Paths.get(cs.getLocation().toURI()).toAbsolutePath().normalize();
            } catch (URISyntaxException | RuntimeException e) {
                return null;
            }
        }
    }
}
