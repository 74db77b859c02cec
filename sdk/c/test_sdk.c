/* The SDK's C ABI, from C: downloads (direct and over a lossy link),
 * an upload, statistics and typed errors; every object freed once.
 * Run by sdk/tests/test_c.py under valgrind's leak checker.
 *
 * usage: test_sdk CA PIN DATA_FILE URL_DIRECT URL_LOSSY AUTHORITY_LOSSY OUT_FILE */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qnc.h"

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); exit(1); } } while (0)

static unsigned char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)n);
    CHECK(fread(b, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

static void on_progress(void *user, uint64_t bytes, int64_t total, double goodput_bps) {
    (void)goodput_bps;
    uint64_t *last = user;
    CHECK(total == -1 || bytes <= (uint64_t)total);
    *last = bytes;
}

static char *join(const char *a, const char *b) {
    char *s = malloc(strlen(a) + strlen(b) + 1);
    strcpy(s, a);
    strcat(s, b);
    return s;
}

int main(int argc, char **argv) {
    CHECK(argc == 8);
    const char *ca = argv[1], *pin = argv[2], *data_file = argv[3], *direct = argv[4],
               *lossy = argv[5], *authority = argv[6], *out_file = argv[7];
    size_t want_len;
    unsigned char *want = read_file(data_file, &want_len);
    QncError *err = NULL;
    QncResponse *r = NULL;

    /* A bad CA file: no client, a Config error. */
    QncConfig bad = qnc_config_default();
    bad.ca_file = "/nonexistent.pem";
    CHECK(qnc_client_new(&bad, &err) == NULL);
    CHECK(err != NULL && err->kind == QNC_ERROR_KIND_CONFIG && err->message != NULL);
    CHECK(strcmp(qnc_error_kind_name(err->kind), "config") == 0);
    qnc_error_free(err);
    err = NULL;

    QncConfig cfg = qnc_config_default();
    cfg.ca_file = ca;
    cfg.request_timeout_ms = 60000;
    QncClient *c = qnc_client_new(&cfg, &err);
    CHECK(c != NULL && err == NULL);

    /* Into memory, with progress. */
    uint64_t last = 0;
    char *url = join(direct, "/data.bin");
    CHECK(qnc_get(c, url, NULL, on_progress, &last, &r, &err) == 0);
    CHECK(r->status == 200 && r->body_len == want_len && memcmp(r->body, want, want_len) == 0);
    CHECK(last == want_len);
    qnc_response_free(r);
    free(url);

    /* Over 10 % loss into a file; the decoder recovered packets. */
    url = join(lossy, "/data.bin");
    CHECK(qnc_get(c, url, out_file, NULL, NULL, &r, &err) == 0);
    CHECK(r->status == 200 && r->body == NULL && r->bytes == want_len);
    qnc_response_free(r);
    free(url);
    size_t got_len;
    unsigned char *got = read_file(out_file, &got_len);
    CHECK(got_len == want_len && memcmp(got, want, want_len) == 0);
    free(got);
    QncStats st;
    CHECK(qnc_client_stats(c, authority, &st));
    CHECK(st.coding && st.recovered > 0 && st.rtt_ms > 0);

    /* An upload, and a missing file (a status, not an error). */
    url = join(direct, "/upload");
    CHECK(qnc_post(c, url, want, 1000, &r, &err) == 0);
    CHECK(r->status == 200 && r->body_len > 0);
    qnc_response_free(r);
    free(url);
    url = join(direct, "/missing");
    CHECK(qnc_get(c, url, NULL, NULL, NULL, &r, &err) == 0);
    CHECK(r->status == 404);
    qnc_response_free(r);
    free(url);

    /* Bad arguments are errors, not crashes. */
    CHECK(qnc_get(c, NULL, NULL, NULL, NULL, &r, &err) == -1);
    CHECK(err->kind == QNC_ERROR_KIND_CONFIG);
    qnc_error_free(err);
    err = NULL;
    CHECK(qnc_get(c, "ftp://x/", NULL, NULL, NULL, &r, NULL) == -1);
    qnc_client_free(c);

    /* A wrong pin: a TLS error. The right pin works. */
    QncConfig pinned = qnc_config_default();
    pinned.pin_sha256 = "0000000000000000000000000000000000000000000000000000000000000000";
    c = qnc_client_new(&pinned, &err);
    CHECK(c != NULL);
    url = join(direct, "/bytes/10");
    CHECK(qnc_get(c, url, NULL, NULL, NULL, &r, &err) == -1);
    CHECK(err->kind == QNC_ERROR_KIND_TLS);
    qnc_error_free(err);
    err = NULL;
    qnc_client_free(c);
    pinned.pin_sha256 = pin;
    c = qnc_client_new(&pinned, &err);
    CHECK(qnc_get(c, url, NULL, NULL, NULL, &r, &err) == 0);
    CHECK(r->body_len == 10 && memcmp(r->body, "abcdefghij", 10) == 0);
    qnc_response_free(r);
    free(url);
    qnc_client_free(c);

    qnc_client_free(NULL);
    qnc_response_free(NULL);
    qnc_error_free(NULL);
    free(want);
    printf("ok\n");
    return 0;
}
