// The SDK's Kotlin bindings (uniffi.qnc) on the JVM against a live
// qnc-server: direct and lossy downloads, upload, coroutine fetch,
// cancellation and typed errors. sdk/tests/test_kotlin.py starts the server
// and the linkem relays and passes them in the environment:
//   QNC_CA         CA certificate (PEM) of the test server
//   QNC_URL        https://127.0.0.1:PORT, the server itself
//   QNC_LOSSY_URL  the same through a relay losing 10 % of packets
//   QNC_SLOW_URL   the same through a 4 Mbit/s relay
//   QNC_DATA       the file the server serves at /data.bin

import java.nio.file.Files
import java.nio.file.Path
import java.security.MessageDigest
import java.util.Collections
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.Assertions.assertArrayEquals
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNotNull
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows
import uniffi.qnc.Client
import uniffi.qnc.Config
import uniffi.qnc.ProgressListener
import uniffi.qnc.QncException
import uniffi.qnc.Request

private fun env(name: String): String {
    val v = System.getenv(name)
    // An unset variable reaches the forked JVM as Maven's unresolved "${env.X}".
    require(!v.isNullOrBlank() && !v.startsWith("\${")) {
        "$name is not set (sdk/tests/test_kotlin.py sets it)"
    }
    return v
}

private fun sha256(b: ByteArray): String =
    MessageDigest.getInstance("SHA-256").digest(b).joinToString("") { "%02x".format(it) }

/** Records every progress report (they arrive on the connection's thread). */
class Progress : ProgressListener {
    val calls: MutableList<Pair<ULong, ULong?>> = Collections.synchronizedList(mutableListOf())

    override fun onProgress(bytes: ULong, total: ULong?, goodputBps: Double) {
        calls.add(bytes to total)
    }
}

class SdkTest {
    private val ca = env("QNC_CA")
    private val base = env("QNC_URL")
    private val data: ByteArray = Files.readAllBytes(Path.of(env("QNC_DATA")))

    private fun client(cfg: Config = Config(caFile = ca)) = Client(cfg)

    /** Runs `block` with a client, then closes its connections and frees it. */
    private fun <T> withClient(cfg: Config = Config(caFile = ca), block: (Client) -> T): T =
        client(cfg).use { c ->
            try {
                block(c)
            } finally {
                c.shutdown()
            }
        }

    @Test
    fun downloadWithProgress() = withClient { c ->
        val p = Progress()
        val r = c.get("$base/data.bin", p)
        assertEquals(200, r.status.toInt())
        assertEquals(data.size, r.body.size)
        assertArrayEquals(data, r.body)
        assertEquals(data.size.toULong(), r.bytes)
        assertTrue(r.headers.any { it.name == "content-length" }, "headers: ${r.headers}")
        val last = synchronized(p.calls) { p.calls.last() }
        assertEquals(data.size.toULong() to data.size.toULong(), last)
        val st = c.stats().single()
        assertTrue(st.coding, "$st")
        assertNotNull(st.rttMs)
    }

    @Test
    fun tenPercentLossRecoveredByDecoding() =
        withClient(Config(caFile = ca, requestTimeoutMs = 60_000uL)) { c ->
            val r = c.get("${env("QNC_LOSSY_URL")}/data.bin", null)
            assertEquals(200, r.status.toInt())
            assertEquals(sha256(data), sha256(r.body))
            val st = c.stats().single()
            assertTrue(st.coding, "$st")
            assertTrue(st.recovered > 0uL, "nothing recovered: $st")
            assertTrue(st.repairOverhead > 0.0, "$st")
        }

    @Test
    fun uploadIsHashedByTheServer() = withClient { c ->
        val body = ByteArray(256_000) { (it % 256).toByte() }
        val r = c.post("$base/upload", body, null)
        assertEquals(200, r.status.toInt())
        val h = r.headers.associate { it.name to it.value }
        assertEquals(sha256(body), h["x-sha256"], "headers: ${r.headers}")
    }

    @Test
    fun fetchIsASuspendFunction() = withClient { c ->
        val (small, big) = runBlocking {
            listOf(async { c.fetch("$base/bytes/1000") }, async { c.fetch("$base/data.bin") }).awaitAll()
        }
        assertEquals(1000, small.body.size)
        assertEquals(sha256(data), sha256(big.body))
    }

    @Test
    fun cancelARunningCall() = withClient { c ->
        val p = Progress()
        val call = c.start(Request(url = "${env("QNC_SLOW_URL")}/bytes/50000000"), p, null)
        call.use {
            assertNull(call.waitTimeout(1500uL), "50 MB at 4 Mbit/s cannot be done in 1.5 s")
            assertTrue(p.calls.isNotEmpty(), "progress while running")
            call.cancel()
            assertThrows<QncException.Cancelled> { call.wait() }
            assertTrue(call.isDone())
        }
    }

    @Test
    fun typedErrorsAndStatus() {
        assertThrows<QncException.Config> { Client(Config(caFile = "/nonexistent.pem")) }
        assertThrows<QncException.Tls> {
            withClient(Config(pinSha256 = "00".repeat(32))) { it.get("$base/data.bin", null) }
        }
        withClient { c ->
            assertEquals(404, c.get("$base/missing", null).status.toInt())
        }
    }
}
