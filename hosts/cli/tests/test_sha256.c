/* test_sha256.c — the CLI's SHA-256 (sha256.c) against FIPS 180-4's examples (and the NIST
 * long-message vectors), at the lengths where the padding changes shape, fed in pieces of every
 * size, and through a file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_test.h"
#include "sha256.h"

static void hex_of(const void *data, size_t size, char hex[SHA256_HEX_SIZE])
{
    struct sha256 h;
    unsigned char digest[SHA256_DIGEST_BYTES];
    sha256_init(&h);
    sha256_update(&h, data, size);
    sha256_final(&h, digest);
    sha256_hex(digest, hex);
}

START_TEST(test_fips_180_4_examples)
{
    static const struct cli_text_case cases[] = {
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        /* 448 bits: the length no longer fits in the first block's padding. */
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
        {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqr"
         "lmnopqrsmnopqrstnopqrstu",
         "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char hex[SHA256_HEX_SIZE];
        hex_of(cases[i].text, strlen(cases[i].text), hex);
        ck_assert_msg(strcmp(hex, cases[i].want) == 0, "sha256(\"%s\") = %s, expected %s",
                      cases[i].text, hex, cases[i].want);
    }
}
END_TEST

/* One million 'a's, given 1000 at a time as well as at once. */
START_TEST(test_a_million_as)
{
    enum { MILLION = 1000000 };
    char *as = malloc(MILLION);
    ck_assert_ptr_nonnull(as);
    memset(as, 'a', MILLION);
    char hex[SHA256_HEX_SIZE];
    hex_of(as, MILLION, hex);
    ck_assert_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    struct sha256 h;
    unsigned char digest[SHA256_DIGEST_BYTES];
    sha256_init(&h);
    for (int i = 0; i < 1000; i++)
        sha256_update(&h, as, 1000);
    sha256_final(&h, digest);
    sha256_hex(digest, hex);
    ck_assert_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    free(as);
}
END_TEST

/* Bytes (7i + 3) mod 256: the lengths around a block's 56th and 64th byte, where the padding
 * takes one block or two (digests from Python's hashlib). */
static const struct {
    size_t length;
    const char *digest;
} boundaries[] = {
    {55, "e7313d333c272e639f790978283f9eb392e843d0f29b7016828bb1daa4aac70b"},
    {56, "4324d65f3c103567f5589c710bc08f8523f929a9272e3af36fc968e52abc6c27"},
    {57, "35df609437dcfea3279283ab79fd554e2bf78f8f7ae2de532d8ee300b09e8f73"},
    {63, "81c80242132f230c3bd41b3e63bbcff16107339549214a99614ff26664625055"},
    {64, "39e3d7b6b5d075d37d053ad89b24b41bef4f3c29760c84447cab3f3be1882241"},
    {65, "aacca6ff74fdbb296d165a45cecfa04e5127bc008770fbbdd48006f2d2fae95e"},
    {119, "9ce7368e4daf32341631b492e80359dc9f594b48453cd0dd5bf0b19279cc177e"},
    {120, "7836b787757e95e58b3ca5aec90b1b004e8deba1e50e9675af9cabf1a13a04b5"},
    {121, "1189a98a00c71bc1848ea8bdc9700b442bee0be7c3f45172303f1ab0b6f1617e"},
};

static void pattern(unsigned char *bytes, size_t length)
{
    for (size_t i = 0; i < length; i++)
        bytes[i] = (unsigned char)((i * 7 + 3) & 255);
}

START_TEST(test_padding_boundaries_in_pieces_of_every_size)
{
    for (size_t c = 0; c < sizeof boundaries / sizeof boundaries[0]; c++) {
        unsigned char bytes[128];
        size_t length = boundaries[c].length;
        pattern(bytes, length);
        for (size_t piece = 1; piece <= length; piece++) {
            struct sha256 h;
            unsigned char digest[SHA256_DIGEST_BYTES];
            char hex[SHA256_HEX_SIZE];
            sha256_init(&h);
            for (size_t at = 0; at < length; at += piece)
                sha256_update(&h, bytes + at, length - at < piece ? length - at : piece);
            sha256_final(&h, digest);
            sha256_hex(digest, hex);
            ck_assert_msg(strcmp(hex, boundaries[c].digest) == 0,
                          "%d bytes in pieces of %d: %s, expected %s", (int)length, (int)piece, hex,
                          boundaries[c].digest);
        }
    }
}
END_TEST

START_TEST(test_a_file_hashes_as_its_bytes)
{
    char path[] = "/tmp/test_sha256_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    unsigned char bytes[121];
    pattern(bytes, sizeof bytes);
    ck_assert_int_eq(write(fd, bytes, sizeof bytes), (ssize_t)sizeof bytes);
    close(fd);
    char hex[SHA256_HEX_SIZE];
    int64_t size = -1;
    ck_assert_int_eq(sha256_file(path, hex, &size), 0);
    ck_assert_int_eq(size, 121);
    ck_assert_str_eq(hex, boundaries[8].digest);
    unlink(path);
    ck_assert_int_eq(sha256_file(path, hex, &size), -1);
}
END_TEST

static const struct cli_test tests[] = {
    CLI_TEST(test_fips_180_4_examples),
    CLI_TEST(test_a_million_as),
    CLI_TEST(test_padding_boundaries_in_pieces_of_every_size),
    CLI_TEST(test_a_file_hashes_as_its_bytes),
};
CLI_SUITE("sha256", "sha256", NULL, NULL, tests);
