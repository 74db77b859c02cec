// A kwik (QUIC in Java) + flupke (HTTP/3) peer for nc-interop: an HTTP/3
// client and server (the test cases all run over HTTP/3, as our endpoint
// speaks nothing else), built by
// interop/peers/setup-third-party.sh against kwik's and flupke's jars from
// Maven Central and started by interop/peers/endpoints/kwik.sh.
//
//   server --addr HOST:PORT --root DIR --cert PEM --key PEM [--retry] [--log FILE]
//          (prints "listening HOST:PORT" once bound; port 0 picks one)
//   client (--ca FILE | --insecure) --outdir DIR [--multiconnect | --resume | --key-update]
//          [--server-name NAME] [--keylog FILE] [--log FILE] URL...
//
// The client exits 1 if a download failed, or if --resume got no session
// ticket from the first connection. It sends no 0-RTT: flupke's client
// cannot put requests in early data.

import java.io.EOFException;
import java.io.File;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.FilterInputStream;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PushbackInputStream;
import java.net.DatagramSocket;
import java.net.Inet6Address;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.PKCS8EncodedKeySpec;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509TrustManager;
import tech.kwik.core.QuicClientConnection;
import tech.kwik.core.QuicConnection;
import tech.kwik.core.QuicSessionTicket;
import tech.kwik.core.QuicStream;
import tech.kwik.core.common.EncryptionLevel;
import tech.kwik.core.impl.QuicConnectionImpl;
import tech.kwik.core.impl.QuicClientConnectionImpl;
import tech.kwik.core.log.FileLogger;
import tech.kwik.core.log.Logger;
import tech.kwik.core.log.NullLogger;
import tech.kwik.core.server.ApplicationProtocolConnection;
import tech.kwik.core.server.ApplicationProtocolConnectionFactory;
import tech.kwik.core.server.ServerConnectionConfig;
import tech.kwik.core.server.ServerConnector;
import tech.kwik.core.stream.FlowControlUpdateListener;
import tech.kwik.flupke.impl.Http3ClientConnectionImpl;
import tech.kwik.flupke.server.Http3ApplicationProtocolFactory;

public final class KwikPeer {
    /** Requests in flight at once on one connection. */
    static final int PARALLEL = 64;

    /** Parsed command line: flags with a value, switches, and the rest. */
    static final class Args {
        final Map<String, String> values = new HashMap<>();
        final List<String> switches = new ArrayList<>();
        final List<String> rest = new ArrayList<>();

        Args(String[] argv, List<String> withValue) {
            for (int i = 0; i < argv.length; i++) {
                String a = argv[i];
                if (withValue.contains(a)) {
                    if (i + 1 >= argv.length) die(a + " needs a value");
                    values.put(a, argv[++i]);
                } else if (a.startsWith("--")) {
                    switches.add(a);
                } else {
                    rest.add(a);
                }
            }
        }

        boolean has(String s) {
            return switches.contains(s);
        }

        String need(String flag) {
            String v = values.get(flag);
            if (v == null) die(flag + " is required");
            return v;
        }
    }

    static void die(String why) {
        System.err.println("kwik-peer: " + why);
        System.exit(2);
    }

    public static void main(String[] argv) throws Exception {
        if (argv.length == 0) die("usage: kwik-peer server|client ...");
        String[] rest = java.util.Arrays.copyOfRange(argv, 1, argv.length);
        switch (argv[0]) {
            case "server":
                server(new Args(rest, List.of("--addr", "--root", "--cert", "--key", "--log")));
                break;
            case "client":
                System.exit(client(new Args(rest, List.of("--ca", "--outdir", "--keylog", "--log", "--server-name"))));
                break;
            default:
                die("first argument must be server or client, not " + argv[0]);
        }
    }

    static Logger logger(Args a) throws IOException {
        String file = a.values.get("--log");
        if (file == null) return new NullLogger();
        Logger log = new FileLogger(new File(file));
        log.logInfo(true);
        log.logWarning(true);
        return log;
    }

    // ---- server -----------------------------------------------------------

    static void server(Args a) throws Exception {
        String addr = a.need("--addr");
        int colon = addr.lastIndexOf(':');
        String host = addr.substring(0, colon).replaceAll("^\\[|\\]$", "");
        int port = Integer.parseInt(addr.substring(colon + 1));
        File root = new File(a.need("--root")).getCanonicalFile();
        char[] password = "kwik-peer".toCharArray();
        KeyStore keys = keyStore(a.need("--cert"), a.need("--key"), password);
        ServerConnectionConfig config = ServerConnectionConfig.builder()
                .maxIdleTimeoutInSeconds(30)
                .maxOpenPeerInitiatedBidirectionalStreams(100)
                .maxOpenPeerInitiatedUnidirectionalStreams(10)
                .maxBidirectionalStreamBufferSize(1_000_000)
                .maxUnidirectionalStreamBufferSize(1_000_000)
                .maxConnectionBufferSize(10_000_000)
                .retryRequired(a.has("--retry"))
                .connectionIdLength(8)
                .build();
        DatagramSocket socket = new DatagramSocket(new InetSocketAddress(host, port));
        ServerConnector connector = ServerConnector.builder()
                .withSocket(socket)
                .withKeyStore(keys, "server", password)
                .withConfiguration(config)
                .withLogger(logger(a))
                .build();
        Http3ApplicationProtocolFactory h3 = new Http3ApplicationProtocolFactory((req, resp) -> {
            File f = inRoot(root, req.path());
            if (!req.method().equals("GET") || f == null) {
                resp.setStatus(404);
                resp.getOutputStream().close();
                return;
            }
            resp.setStatus(200);
            try (InputStream in = new FileInputStream(f); OutputStream out = resp.getOutputStream()) {
                in.transferTo(out);
            }
        });
        connector.registerApplicationProtocol("h3", new SkipReservedFrames(h3));
        connector.start();
        InetSocketAddress bound = (InetSocketAddress) socket.getLocalSocketAddress();
        String shown = bound.getAddress() instanceof Inet6Address
                ? "[" + bound.getAddress().getHostAddress() + "]" : bound.getAddress().getHostAddress();
        System.out.println("listening " + shown + ":" + bound.getPort());
        System.out.flush();
        System.err.println("kwik-peer: serving " + root + " (h3)" + (a.has("--retry") ? " with Retry" : ""));
        Thread.currentThread().join();
    }

    /** A key store holding the PKCS#8 key in `keyPem` with the chain in `certPem`, as "server". */
    static KeyStore keyStore(String certPem, String keyPem, char[] password) throws Exception {
        List<java.security.cert.Certificate> chain = new ArrayList<>();
        try (InputStream in = new FileInputStream(certPem)) {
            chain.addAll(CertificateFactory.getInstance("X.509").generateCertificates(in));
        }
        if (chain.isEmpty()) die(certPem + " holds no certificate");
        String pem = Files.readString(Path.of(keyPem));
        if (!pem.contains("-----BEGIN PRIVATE KEY-----")) die(keyPem + " is not a PKCS#8 key (BEGIN PRIVATE KEY)");
        String b64 = pem.replaceAll("-----[A-Z ]+-----", "").replaceAll("\\s", "");
        PKCS8EncodedKeySpec spec = new PKCS8EncodedKeySpec(Base64.getDecoder().decode(b64));
        String alg = chain.get(0).getPublicKey().getAlgorithm();
        PrivateKey key = KeyFactory.getInstance(alg).generatePrivate(spec);
        KeyStore ks = KeyStore.getInstance("PKCS12");
        ks.load(null, null);
        ks.setKeyEntry("server", key, password, chain.toArray(new java.security.cert.Certificate[0]));
        return ks;
    }

    /** The file `path` names under `root`, or null if it is outside or not a readable file. */
    static File inRoot(File root, String path) throws IOException {
        int q = path.indexOf('?');
        if (q >= 0) path = path.substring(0, q);
        File f = new File(root, path).getCanonicalFile();
        if (!f.toPath().startsWith(root.toPath()) || !f.isFile() || !f.canRead()) return null;
        return f;
    }

    /**
     * flupke 0.9.4's server wants a request stream to start with HEADERS and
     * closes the connection (H3_FRAME_UNEXPECTED) on anything else, but RFC
     * 9114 §4.1 allows frames of unknown type before it, and quiche sends a
     * reserved (GREASE) frame there on its first request. This factory hands
     * flupke its request streams with leading reserved frames removed.
     */
    static final class SkipReservedFrames implements ApplicationProtocolConnectionFactory {
        final ApplicationProtocolConnectionFactory inner;

        SkipReservedFrames(ApplicationProtocolConnectionFactory inner) {
            this.inner = inner;
        }

        @Override
        public ApplicationProtocolConnection createConnection(String protocol, QuicConnection conn) {
            ApplicationProtocolConnection c = inner.createConnection(protocol, conn);
            Watchdog dog = conn instanceof QuicConnectionImpl impl ? new Watchdog(impl) : null;
            return new ApplicationProtocolConnection() {
                @Override
                public void acceptPeerInitiatedStream(QuicStream stream) {
                    c.acceptPeerInitiatedStream(stream.isClientInitiatedBidirectional() ? new Filtered(stream, dog) : stream);
                }
            };
        }

        @Override
        public int maxConcurrentPeerInitiatedUnidirectionalStreams() {
            return inner.maxConcurrentPeerInitiatedUnidirectionalStreams();
        }

        @Override
        public long maxTotalPeerInitiatedUnidirectionalStreams() {
            return inner.maxTotalPeerInitiatedUnidirectionalStreams();
        }

        @Override
        public int maxConcurrentPeerInitiatedBidirectionalStreams() {
            return inner.maxConcurrentPeerInitiatedBidirectionalStreams();
        }

        @Override
        public long maxTotalPeerInitiatedBidirectionalStreams() {
            return inner.maxTotalPeerInitiatedBidirectionalStreams();
        }

        @Override
        public int minUnidirectionalStreamReceiverBufferSize() {
            return inner.minUnidirectionalStreamReceiverBufferSize();
        }

        @Override
        public long maxUnidirectionalStreamReceiverBufferSize() {
            return inner.maxUnidirectionalStreamReceiverBufferSize();
        }

        @Override
        public int minBidirectionalStreamReceiverBufferSize() {
            return inner.minBidirectionalStreamReceiverBufferSize();
        }

        @Override
        public long maxBidirectionalStreamReceiverBufferSize() {
            return inner.maxBidirectionalStreamReceiverBufferSize();
        }

        @Override
        public boolean enableDatagramExtension() {
            return inner.enableDatagramExtension();
        }
    }

    /**
     * A stream whose input starts after its leading reserved frames (type
     * 0x1f * N + 0x21) and whose output does not stall (see {@link Unstalled}).
     */
    static final class Filtered implements QuicStream {
        final QuicStream s;
        InputStream in;
        final Watchdog dog;
        OutputStream out;

        Filtered(QuicStream s, Watchdog dog) {
            this.s = s;
            this.dog = dog;
        }

        @Override
        public synchronized InputStream getInputStream() {
            if (in == null) in = new SkipLeading(s.getInputStream());
            return in;
        }

        @Override
        public synchronized OutputStream getOutputStream() {
            if (out == null) {
                out = s.getOutputStream();
                if (dog != null && out instanceof FlowControlUpdateListener l) out = dog.watch(out, l, s.getStreamId());
            }
            return out;
        }

        @Override
        public int getStreamId() {
            return s.getStreamId();
        }

        @Override
        public boolean isUnidirectional() {
            return s.isUnidirectional();
        }

        @Override
        public boolean isClientInitiatedBidirectional() {
            return s.isClientInitiatedBidirectional();
        }

        @Override
        public boolean isServerInitiatedBidirectional() {
            return s.isServerInitiatedBidirectional();
        }

        @Override
        public void abortReading(long code) {
            s.abortReading(code);
        }

        @Override
        public void resetStream(long code) {
            s.resetStream(code);
        }
    }

    /**
     * Works around a race in kwik 0.10.8's stream output
     * (StreamOutputStreamImpl.sendRequestsQueued): a writer queues a send
     * request, which wakes the sender, and only then counts it. An idle
     * sender runs the request first, counts -1, and so does not queue the
     * next one; the buffered rest of the response waits for the writer's
     * next write or close. When that write blocks on the full send buffer
     * (51,200 bytes), or the race hits the close, the response stalls for
     * good while the connection stays alive: about 1 in 10 downloads of
     * 1 MB from this server stopped (a thread dump shows the writer waiting
     * in SendBuffer.write and an idle sender).
     *
     * Every {@link #PERIOD_MS} without new stream data on the connection,
     * each response stream that is being written or was closed in the last
     * {@link #LINGER_MS} gets a flow-control "unblocked" notice, which
     * queues a send request without waking the sender and counts it; then
     * a request that sends nothing wakes the sender. From then on the
     * sender queues its own requests. A spare request is harmless (kwik's
     * own comment) and nothing is added to any stream.
     */
    static final class Watchdog {
        static final long PERIOD_MS = 250;
        static final long LINGER_MS = 3_000;
        static final ScheduledExecutorService TIMER = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "kwik-peer-watchdog");
            t.setDaemon(true);
            return t;
        });
        final QuicConnectionImpl conn;
        final List<Watched> streams = new ArrayList<>();
        ScheduledFuture<?> task;
        long lastSent = -1;

        Watchdog(QuicConnectionImpl conn) {
            this.conn = conn;
        }

        synchronized OutputStream watch(OutputStream out, FlowControlUpdateListener l, int id) {
            Watched w = new Watched(out, l, id);
            streams.add(w);
            if (task == null) task = TIMER.scheduleWithFixedDelay(this::check, PERIOD_MS, PERIOD_MS, TimeUnit.MILLISECONDS);
            return w;
        }

        synchronized void check() {
            long now = System.nanoTime();
            streams.removeIf(w -> w.closedAt != 0 && now - w.closedAt > LINGER_MS * 1_000_000);
            if (streams.isEmpty()) {
                task.cancel(false);
                task = null;
                return;
            }
            long sent = conn.getStats().dataBytesSent();
            if (sent != lastSent) {
                lastSent = sent;
                return;
            }
            for (Watched w : streams) w.listener.streamNotBlocked(w.id);
            conn.send(max -> null, 1, EncryptionLevel.App, f -> {}, true);
        }
    }

    /** A response stream's output, noting when it is closed. */
    static final class Watched extends FilterOutputStream {
        final FlowControlUpdateListener listener;
        final int id;
        volatile long closedAt;

        Watched(OutputStream out, FlowControlUpdateListener listener, int id) {
            super(out);
            this.listener = listener;
            this.id = id;
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            out.write(b, off, len);
        }

        @Override
        public void close() throws IOException {
            closedAt = System.nanoTime();
            out.close();
        }
    }

    /** Drops reserved frames at the start of `in`, then passes everything through. */
    static final class SkipLeading extends FilterInputStream {
        boolean skipped;

        SkipLeading(InputStream in) {
            super(new PushbackInputStream(in, 8));
        }

        void skip() throws IOException {
            if (skipped) return;
            skipped = true;
            PushbackInputStream p = (PushbackInputStream) in;
            while (true) {
                byte[] raw = new byte[8];
                int n = readVarint(p, raw);
                if (n <= 0) return;
                long type = decode(raw, n);
                if (type < 0x21 || (type - 0x21) % 0x1f != 0) {
                    p.unread(raw, 0, n);
                    return;
                }
                int m = readVarint(p, raw);
                if (m <= 0) return;
                long len = decode(raw, m);
                for (long left = len; left > 0; ) {
                    long k = p.skip(left);
                    if (k <= 0) {
                        if (p.read() < 0) return;
                        k = 1;
                    }
                    left -= k;
                }
            }
        }

        /** Reads one QUIC variable-length integer's bytes into `raw`; returns their count, 0 at EOF. */
        static int readVarint(InputStream in, byte[] raw) throws IOException {
            int b = in.read();
            if (b < 0) return 0;
            raw[0] = (byte) b;
            int n = 1 << (b >> 6);
            for (int i = 1; i < n; i++) {
                int c = in.read();
                if (c < 0) throw new EOFException("truncated frame header");
                raw[i] = (byte) c;
            }
            return n;
        }

        static long decode(byte[] raw, int n) {
            long v = raw[0] & 0x3f;
            for (int i = 1; i < n; i++) v = (v << 8) | (raw[i] & 0xff);
            return v;
        }

        @Override
        public int read() throws IOException {
            skip();
            return in.read();
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            skip();
            return in.read(b, off, len);
        }
    }

    // ---- client -----------------------------------------------------------

    static int client(Args a) throws Exception {
        if (a.rest.isEmpty()) die("no URL to fetch");
        File outdir = new File(a.need("--outdir"));
        outdir.mkdirs();
        List<URI> urls = new ArrayList<>();
        for (String u : a.rest) urls.add(URI.create(u));
        Client c = new Client(a, outdir);
        int failed = 0;
        if (a.has("--multiconnect")) {
            for (URI u : urls) failed += c.oneConnection(List.of(u), null, false);
        } else if (a.has("--resume")) {
            failed = c.resumed(urls);
        } else {
            failed = c.oneConnection(urls, null, a.has("--key-update"));
        }
        return failed == 0 ? 0 : 1;
    }

    /**
     * PKIX validation against the CA certificates in a PEM file. agent15 (kwik's
     * TLS) asks a custom trust manager with the auth type "RSA", for which the
     * JDK demands keyEncipherment in the leaf's key usage, which a TLS 1.3
     * ECDSA certificate (ours: digitalSignature only) does not have; TLS 1.3
     * has no key exchange by certificate, so the auth type is left unknown.
     */
    static final class AnyKeyType implements X509TrustManager {
        final X509TrustManager pkix;

        AnyKeyType(String pem) throws Exception {
            KeyStore ks = KeyStore.getInstance(KeyStore.getDefaultType());
            ks.load(null, null);
            int i = 0;
            try (InputStream in = new FileInputStream(pem)) {
                for (var cert : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
                    ks.setCertificateEntry("ca" + i++, (X509Certificate) cert);
                }
            }
            TrustManagerFactory f = TrustManagerFactory.getInstance("PKIX");
            f.init(ks);
            pkix = (X509TrustManager) f.getTrustManagers()[0];
        }

        @Override
        public void checkServerTrusted(X509Certificate[] chain, String authType) throws CertificateException {
            pkix.checkServerTrusted(chain, "UNKNOWN");
        }

        @Override
        public void checkClientTrusted(X509Certificate[] chain, String authType) throws CertificateException {
            pkix.checkClientTrusted(chain, authType);
        }

        @Override
        public X509Certificate[] getAcceptedIssuers() {
            return pkix.getAcceptedIssuers();
        }
    }

    static final class Client {
        final Args args;
        final File outdir;
        final Logger log;
        final X509TrustManager trust;
        final ExecutorService pool = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r);
            t.setDaemon(true);
            return t;
        });
        List<QuicSessionTicket> lastTickets = List.of();

        Client(Args a, File outdir) throws Exception {
            this.args = a;
            this.outdir = outdir;
            this.log = logger(a);
            String ca = a.values.get("--ca");
            if (ca == null && !a.has("--insecure")) die("--ca FILE or --insecure is required");
            this.trust = ca == null ? null : new AnyKeyType(ca);
        }

        /** An HTTP/3 connection (flupke over a kwik connection) to `first`'s authority. */
        Http3ClientConnectionImpl connect(URI first, QuicSessionTicket ticket) throws IOException {
            // kwik checks the certificate against DNS names only: with
            // --server-name, that name goes in the SNI and is checked, while
            // the packets go to the URL's host.
            String name = args.values.get("--server-name");
            URI target = first;
            if (name != null) target = URI.create("https://" + name + ":" + first.getPort() + "/");
            QuicClientConnection.Builder b = QuicClientConnection.newBuilder()
                    .version(QuicConnection.QuicVersion.V1)
                    .applicationProtocol("h3")
                    .uri(target)
                    .connectTimeout(Duration.ofSeconds(30))
                    .maxIdleTimeout(Duration.ofSeconds(30))
                    // RFC 9114 §6.2: room for the server's control and QPACK streams.
                    .maxOpenPeerInitiatedUnidirectionalStreams(10)
                    .maxOpenPeerInitiatedBidirectionalStreams(0)
                    .logger(log);
            if (trust != null) b.customTrustManager(trust);
            else b.noServerCertificateCheck();
            String keylog = args.values.get("--keylog");
            if (keylog != null) b.secrets(Path.of(keylog));
            if (name != null) b.proxy(first.getHost().replaceAll("^\\[|\\]$", ""));
            if (ticket != null) b.sessionTicket(ticket);
            quic = b.build();
            Http3ClientConnectionImpl h3 = new Http3ClientConnectionImpl(quic, pool);
            h3.connect();
            return h3;
        }

        QuicClientConnection quic;

        /** Fetches `urls` on one connection (resuming `ticket` if given); returns the number of failures. */
        int oneConnection(List<URI> urls, QuicSessionTicket ticket, boolean keyUpdate) {
            try {
                Http3ClientConnectionImpl h3 = connect(urls.get(0), ticket);
                int failed = keyUpdate ? fetchWithKeyUpdate(h3, urls) : fetchAll(h3, urls);
                // A ticket may arrive just after the last response.
                for (int i = 0; i < 20 && quic.getNewSessionTickets().isEmpty(); i++) sleep(50);
                lastTickets = quic.getNewSessionTickets();
                return failed;
            } catch (IOException e) {
                System.err.println("kwik-peer: connection to " + urls.get(0) + " failed: " + e);
                return urls.size();
            } finally {
                if (quic != null) quic.closeAndWait(Duration.ofSeconds(1));
                quic = null;
            }
        }

        /** The first URL on a full handshake, the rest on a connection resuming its session ticket. */
        int resumed(List<URI> urls) {
            int failed = oneConnection(urls.subList(0, 1), null, false);
            if (lastTickets.isEmpty()) {
                System.err.println("kwik-peer: the server sent no session ticket");
                return failed + 1;
            }
            List<URI> rest = urls.subList(1, urls.size());
            return rest.isEmpty() ? failed : failed + oneConnection(rest, lastTickets.get(0), false);
        }

        static void sleep(long ms) {
            try {
                Thread.sleep(ms);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        File target(URI u) {
            String name = new File(u.getPath()).getName();
            return new File(outdir, name.isEmpty() ? "index.html" : name);
        }

        /** All of `urls` in parallel, at most PARALLEL at a time; returns the number of failures. */
        int fetchAll(Http3ClientConnectionImpl h3, List<URI> urls) {
            ExecutorService workers = Executors.newFixedThreadPool(Math.max(1, Math.min(PARALLEL, urls.size())));
            List<Future<Boolean>> done = new ArrayList<>();
            for (URI u : urls) done.add(workers.submit(() -> fetch(h3, u)));
            int failed = 0;
            for (Future<Boolean> f : done) {
                try {
                    if (!f.get()) failed++;
                } catch (Exception e) {
                    failed++;
                }
            }
            workers.shutdown();
            return failed;
        }

        boolean fetch(Http3ClientConnectionImpl h3, URI u) {
            try {
                HttpRequest req = HttpRequest.newBuilder(u).GET().build();
                HttpResponse<Path> r = h3.send(req, HttpResponse.BodyHandlers.ofFile(target(u).toPath()));
                if (r.statusCode() == 200) return true;
                System.err.println("kwik-peer: GET " + u + ": status " + r.statusCode());
            } catch (IOException e) {
                System.err.println("kwik-peer: GET " + u + " failed: " + e);
            }
            return false;
        }

        /** The first URL with a key update after its first 100 kB, then the rest. */
        int fetchWithKeyUpdate(Http3ClientConnectionImpl h3, List<URI> urls) throws IOException {
            URI u = urls.get(0);
            HttpResponse<InputStream> r = h3.send(HttpRequest.newBuilder(u).GET().build(),
                    HttpResponse.BodyHandlers.ofInputStream());
            try (InputStream in = r.body(); OutputStream file = new FileOutputStream(target(u))) {
                byte[] buf = new byte[16384];
                long got = 0;
                boolean updated = false;
                int n;
                while ((n = in.read(buf)) >= 0) {
                    file.write(buf, 0, n);
                    got += n;
                    if (!updated && got >= 100_000) {
                        ((QuicClientConnectionImpl) quic).updateKeys();
                        updated = true;
                        System.err.println("kwik-peer: key update after " + got + " bytes");
                    }
                }
            }
            int failed = r.statusCode() == 200 ? 0 : 1;
            return failed + fetchAll(h3, urls.subList(1, urls.size()));
        }
    }

    private KwikPeer() {}
}
