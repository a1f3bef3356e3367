/* sha256.c — SHA-256 as FIPS 180-4 defines it (sections 4.1.2, 4.2.2, 5.1.1, 6.2): 64-byte
 * blocks, big-endian words, the message padded with a 1 bit, zeros and its length in bits. */
#include "sha256.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* The first 32 bits of the fractional parts of the cube roots of the first 64 primes. */
static const uint32_t round_constants[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t rotr(uint32_t x, int n)
{
    return (x >> n) | (x << (32 - n));
}

static uint32_t load_be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static void store_be32(unsigned char *p, uint32_t x)
{
    p[0] = (unsigned char)(x >> 24);
    p[1] = (unsigned char)(x >> 16);
    p[2] = (unsigned char)(x >> 8);
    p[3] = (unsigned char)x;
}

/* One 64-byte block into the state (6.2.2). */
static void compress(uint32_t state[8], const unsigned char block[64])
{
    uint32_t w[64];
    for (int t = 0; t < 16; t++)
        w[t] = load_be32(block + 4 * t);
    for (int t = 16; t < 64; t++) {
        uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
        uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
        w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
    uint32_t e = state[4], f = state[5], g = state[6], h = state[7];
    for (int t = 0; t < 64; t++) {
        uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) +
                      round_constants[t] + w[t];
        uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        h = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    state[0] += a;
    state[1] += b;
    state[2] += c;
    state[3] += d;
    state[4] += e;
    state[5] += f;
    state[6] += g;
    state[7] += h;
}

void sha256_init(struct sha256 *h)
{
    /* The first 32 bits of the fractional parts of the square roots of the first 8 primes. */
    static const uint32_t initial[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                        0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(h->state, initial, sizeof initial);
    h->length = 0;
    h->filled = 0;
}

void sha256_update(struct sha256 *h, const void *data, size_t size)
{
    const unsigned char *p = data;
    h->length += size;
    while (size > 0) {
        if (h->filled == 0 && size >= 64) {
            compress(h->state, p);
            p += 64;
            size -= 64;
            continue;
        }
        size_t take = 64 - h->filled < size ? 64 - h->filled : size;
        memcpy(h->block + h->filled, p, take);
        h->filled += take;
        p += take;
        size -= take;
        if (h->filled == 64) {
            compress(h->state, h->block);
            h->filled = 0;
        }
    }
}

void sha256_final(struct sha256 *h, unsigned char digest[SHA256_DIGEST_BYTES])
{
    uint64_t bits = h->length * 8;
    /* A 1 bit, then zeros up to 8 bytes short of a block's end (a whole block more when the
     * length does not fit after the 1 bit), then the length in bits, big-endian (5.1.1). */
    unsigned char pad[72] = {0x80};
    size_t zeros = (h->filled < 56 ? 56 : 120) - h->filled;
    for (int i = 0; i < 8; i++)
        pad[zeros + (size_t)i] = (unsigned char)(bits >> (56 - 8 * i));
    uint64_t length = h->length;
    sha256_update(h, pad, zeros + 8);
    h->length = length;
    for (int i = 0; i < 8; i++)
        store_be32(digest + 4 * i, h->state[i]);
}

void sha256_hex(const unsigned char digest[SHA256_DIGEST_BYTES], char hex[SHA256_HEX_SIZE])
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < SHA256_DIGEST_BYTES; i++) {
        hex[2 * i] = digits[digest[i] >> 4];
        hex[2 * i + 1] = digits[digest[i] & 15];
    }
    hex[2 * SHA256_DIGEST_BYTES] = '\0';
}

int sha256_stream(FILE *f, char hex[SHA256_HEX_SIZE], int64_t *bytes)
{
    struct sha256 h;
    sha256_init(&h);
    unsigned char buffer[65536];
    size_t n;
    while ((n = fread(buffer, 1, sizeof buffer, f)) > 0)
        sha256_update(&h, buffer, n);
    if (ferror(f)) {
        errno = errno != 0 ? errno : EIO;
        return -1;
    }
    unsigned char digest[SHA256_DIGEST_BYTES];
    *bytes = (int64_t)h.length;
    sha256_final(&h, digest);
    sha256_hex(digest, hex);
    return 0;
}

int sha256_file(const char *path, char hex[SHA256_HEX_SIZE], int64_t *bytes)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return -1;
    int rc = sha256_stream(f, hex, bytes);
    int saved = errno;
    fclose(f);
    errno = saved;
    return rc;
}
