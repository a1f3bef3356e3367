/* sha256.h — SHA-256 (FIPS 180-4) for the checksums `clops run --json` gives its output files
 * (sha256.c): small, no dependency, streaming. */
#ifndef CLOPS_CLI_SHA256_H
#define CLOPS_CLI_SHA256_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum { SHA256_DIGEST_BYTES = 32, SHA256_HEX_SIZE = 2 * SHA256_DIGEST_BYTES + 1 };

struct sha256 {
    uint32_t state[8];
    uint64_t length;         /* bytes hashed so far */
    unsigned char block[64]; /* the bytes of an unfinished block */
    size_t filled;           /* how many of them */
};

void sha256_init(struct sha256 *h);
/* Hashes `size` more bytes; any number of calls, of any sizes. */
void sha256_update(struct sha256 *h, const void *data, size_t size);
/* The digest of everything hashed since sha256_init; `h` must be initialised again to reuse. */
void sha256_final(struct sha256 *h, unsigned char digest[SHA256_DIGEST_BYTES]);
/* The digest as 64 lowercase hexadecimal digits and a NUL. */
void sha256_hex(const unsigned char digest[SHA256_DIGEST_BYTES], char hex[SHA256_HEX_SIZE]);
/* The hex digest of what is left to read of `f`: 0, or -1 with errno set on a read error; the
 * bytes hashed in *bytes. */
int sha256_stream(FILE *f, char hex[SHA256_HEX_SIZE], int64_t *bytes);
/* The hex digest of the file at `path`: 0, or -1 with errno set when it cannot be read; its
 * size in *bytes. */
int sha256_file(const char *path, char hex[SHA256_HEX_SIZE], int64_t *bytes);

#endif
