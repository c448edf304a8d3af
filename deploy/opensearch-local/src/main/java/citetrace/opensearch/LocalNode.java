package citetrace.opensearch;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.ServiceLoader;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;
import org.opensearch.common.logging.LogConfigurator;
import org.opensearch.common.settings.Settings;
import org.opensearch.env.Environment;
import org.opensearch.node.InternalSettingsPreparer;
import org.opensearch.node.Node;
import org.opensearch.plugins.ExtensiblePlugin;
import org.opensearch.plugins.Plugin;

/**
 * A real single-node OpenSearch 2.19 started in-process from Maven Central jars (dev/CI only).
 *
 * <p>Usage: {@code java -cp classes:lib/*:knn/* citetrace.opensearch.LocalNode key=value ...}
 * where each argument is an OpenSearch setting ({@code path.home}, {@code http.port}, ...).
 * The special key {@code path.conf} names the config directory (holding log4j2.properties).
 *
 * <p>Plugins are loaded from the classpath by class name, not from plugin bundles: no plugin
 * descriptors, no JarHell check, no security manager.
 */
public final class LocalNode extends Node {

    /** 2.x class names; 3.x renamed some of them to *ModulePlugin. */
    static final String[] PLUGIN_CLASSES = {
        "org.opensearch.transport.Netty4Plugin",
        "org.opensearch.analysis.common.CommonAnalysisPlugin",
        "org.opensearch.painless.PainlessPlugin",
        "org.opensearch.knn.plugin.KNNPlugin",
    };

    private LocalNode(Environment environment, Collection<Class<? extends Plugin>> plugins) {
        super(environment, plugins, true);
    }

    public static void main(String[] args) throws Exception {
        Settings.Builder builder = Settings.builder()
            .put("cluster.name", "citetrace-local")
            .put("node.name", "citetrace-local-1")
            .put("network.host", "127.0.0.1")
            .put("http.port", "9200")
            .put("transport.port", "9300")
            .put("discovery.type", "single-node")
            .put("cluster.routing.allocation.disk.threshold_enabled", false);
        String conf = null;
        for (String arg : args) {
            int eq = arg.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("expected key=value, got [" + arg + "]");
            }
            String key = arg.substring(0, eq);
            String value = arg.substring(eq + 1);
            if (key.equals("path.conf")) {
                conf = value;
            } else {
                builder.put(key, value);
            }
        }
        Settings initial = builder.build();
        String home = initial.get("path.home");
        if (home == null) {
            throw new IllegalArgumentException("path.home=... is required");
        }
        Path homePath = Paths.get(home).toAbsolutePath();
        // PluginsService looks at these folders; keep them present and empty.
        Files.createDirectories(homePath.resolve("plugins"));
        Files.createDirectories(homePath.resolve("modules"));
        Path confPath = conf == null ? homePath.resolve("config") : Paths.get(conf).toAbsolutePath();
        if (!Files.isRegularFile(confPath.resolve("log4j2.properties"))) {
            throw new IllegalStateException("no log4j2.properties in " + confPath);
        }

        String nodeName = initial.get("node.name");
        Environment environment = InternalSettingsPreparer.prepareEnvironment(
            initial, Collections.emptyMap(), confPath, () -> nodeName);
        LogConfigurator.registerErrorListener();
        LogConfigurator.setNodeName(nodeName);
        LogConfigurator.configure(environment);
        installUncaughtExceptionHandler();

        List<Class<? extends Plugin>> plugins = new ArrayList<>();
        for (String name : PLUGIN_CLASSES) {
            try {
                plugins.add(Class.forName(name).asSubclass(Plugin.class));
            } catch (ClassNotFoundException | ClassCastException e) {
                System.err.println("FATAL: plugin class " + name + " not loadable: " + e);
                System.exit(3);
            }
        }

        // Classpath plugins skip the extension loading that plugin bundles get, so k-NN's
        // Painless allowlist (knn scoring functions) would be missing. PainlessPlugin keeps its
        // allowlists in a static map, so loading them once here is enough.
        loadPainlessExtensions();

        final LocalNode node = new LocalNode(environment, plugins);
        final CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                node.close();
                node.awaitClose(30, TimeUnit.SECONDS);
            } catch (Exception e) {
                e.printStackTrace();
            } finally {
                stopped.countDown();
            }
        }, "citetrace-node-shutdown"));
        try {
            node.start();
        } catch (Throwable t) {
            System.err.println("FATAL: node failed to start: " + t);
            t.printStackTrace();
            Runtime.getRuntime().halt(1);
        }
        System.out.println("citetrace LocalNode started: " + node.settings().get("http.port")
            + " (plugins: " + String.join(", ", PLUGIN_CLASSES) + ")");
        // Node threads are daemons: keep the JVM alive until SIGTERM/SIGINT.
        stopped.await();
    }

    /**
     * The distribution's Bootstrap installs a handler that halts the JVM on fatal errors; do the
     * same so that an out-of-memory node dies (and up.sh/health checks notice) instead of lingering.
     */
    private static void installUncaughtExceptionHandler() {
        final Logger logger = LogManager.getLogger(LocalNode.class);
        Thread.setDefaultUncaughtExceptionHandler((thread, t) -> {
            if (t instanceof VirtualMachineError) {
                try {
                    logger.error("fatal error in thread [" + thread.getName() + "], exiting", t);
                } finally {
                    Runtime.getRuntime().halt(1);
                }
            } else {
                logger.error("uncaught exception in thread [" + thread.getName() + "]", t);
            }
        });
    }

    private static void loadPainlessExtensions() throws Exception {
        Class<?> painless = Class.forName("org.opensearch.painless.PainlessPlugin");
        ExtensiblePlugin instance = (ExtensiblePlugin) painless.getConstructor().newInstance();
        ClassLoader loader = LocalNode.class.getClassLoader();
        instance.loadExtensions(new ExtensiblePlugin.ExtensionLoader() {
            @Override
            public <T> List<T> loadExtensions(Class<T> type) {
                List<T> found = new ArrayList<>();
                ServiceLoader.load(type, loader).forEach(found::add);
                return found;
            }
        });
    }
}
