/* test_level1.c — isamax, sdot, cdotc and zdotc in both widths against the reference BLAS's
 * definitions (first index of the largest |x(i)|, 0 for N < 1 or INCX <= 0; negative increments
 * walk from the far end; cdotc conjugates x), then libblastrampoline's recognition of the
 * library, redone here on its handle: the suffix search over isamax_ ("" before "64_" unless
 * hinted), the interface probe (isamax with an N whose low half is 3 and high half negative),
 * the complex return style (cdotc/zdotc first called as if they took a result argument) and the
 * f2c probe (sdot's 0.25 as a float), and that every forwarded routine is found. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lapack.h"

static int failures;

static void check(int ok, const char *what, long long got, long long want)
{
    printf("%s %s: %lld (want %lld)\n", ok ? "PASS" : "FAIL", what, got, want);
    failures += !ok;
}

static void test_isamax(void)
{
    enum { N = 37 };
    float x[N];
    for (int i = 0; i < N; i++)
        x[i] = (float)((i * 7919) % 23) - 11.0f; /* |x| peaks at 11, first at i = 0, repeated */
    x[0] = 3.0f;
    x[17] = -12.5f;
    x[29] = 12.5f; /* a tie with x[17]: the first one wins */
    int n = N, one = 1, two = 2, zero = 0, neg = -1;
    int64_t n64 = N, one64 = 1, two64 = 2, zero64 = 0, neg64 = -1;
    check(isamax_(&n, x, &one) == 18, "isamax_ N=37, tie -12.5/12.5", isamax_(&n, x, &one), 18);
    check(isamax_64_(&n64, x, &one64) == 18, "isamax_64_ N=37, tie -12.5/12.5",
          isamax_64_(&n64, x, &one64), 18);
    /* Every second element: x[0], x[2], ... x[36]; x[17] and x[29] are not among them. */
    int want = 1;
    for (int i = 1; i < 19; i++)
        if (fabsf(x[2 * i]) > fabsf(x[2 * (want - 1)]))
            want = i + 1;
    int n19 = 19;
    int64_t n19_64 = 19;
    check(isamax_(&n19, x, &two) == want, "isamax_ INCX=2", isamax_(&n19, x, &two), want);
    check(isamax_64_(&n19_64, x, &two64) == want, "isamax_64_ INCX=2",
          isamax_64_(&n19_64, x, &two64), want);
    check(isamax_(&zero, x, &one) == 0 && isamax_(&neg, x, &one) == 0, "isamax_ N<=0",
          isamax_(&neg, x, &one), 0);
    check(isamax_64_(&zero64, x, &one64) == 0 && isamax_64_(&neg64, x, &one64) == 0,
          "isamax_64_ N<=0", isamax_64_(&neg64, x, &one64), 0);
    check(isamax_(&n, x, &zero) == 0 && isamax_(&n, x, &neg) == 0, "isamax_ INCX<=0",
          isamax_(&n, x, &neg), 0);
    check(isamax_64_(&n64, x, &zero64) == 0 && isamax_64_(&n64, x, &neg64) == 0,
          "isamax_64_ INCX<=0", isamax_64_(&n64, x, &neg64), 0);
    check(isamax_(&one, x + 17, &one) == 1, "isamax_ N=1", isamax_(&one, x + 17, &one), 1);
}

static void test_dots(void)
{
    const float x[5] = {1, -2, 3, 0.5f, 4}, y[5] = {2, 1, -1, 8, 0.25f};
    int n = 3, two = 2, minus_two = -2, one = 1;
    int64_t n64 = 3, two64 = 2, minus_two64 = -2, one64 = 1;
    /* x(1), x(3), x(5) against y(5), y(3), y(1) (y walked from its far end): 0.25 - 3 + 8. */
    float want = 1 * 0.25f + 3 * -1.0f + 4 * 2.0f;
    check(sdot_(&n, x, &two, y, &minus_two) == want, "sdot_ INCX=2 INCY=-2 (x 1000)",
          (long long)(1000 * sdot_(&n, x, &two, y, &minus_two)), (long long)(1000 * want));
    check(sdot_64_(&n64, x, &two64, y, &minus_two64) == want, "sdot_64_ INCX=2 INCY=-2 (x 1000)",
          (long long)(1000 * sdot_64_(&n64, x, &two64, y, &minus_two64)), (long long)(1000 * want));
    const float complex cx[2] = {1 + 2 * I, 3 - 1 * I}, cy[2] = {2 - 1 * I, -1 + 4 * I};
    /* conj(1+2i)(2-i) + conj(3-i)(-1+4i) = (-5i) + (-7+11i) = -7 + 6i */
    int n2 = 2;
    int64_t n2_64 = 2;
    float complex c = cdotc_(&n2, cx, &one, cy, &one),
                  c64 = cdotc_64_(&n2_64, cx, &one64, cy, &one64);
    check(c == -7 + 6 * I && c64 == c, "cdotc_ and cdotc_64_ conjugate x (imaginary part)",
          (long long)cimagf(c64), 6);
    const double complex zx[2] = {1 + 2 * I, 3 - 1 * I}, zy[2] = {2 - 1 * I, -1 + 4 * I};
    double complex z = zdotc_(&n2, zx, &one, zy, &one),
                   z64 = zdotc_64_(&n2_64, zx, &one64, zy, &one64);
    check(z == -7 + 6 * I && z64 == z, "zdotc_ and zdotc_64_ conjugate x (real part)",
          (long long)creal(z64), -7);
}

/* ---- libblastrampoline's recognition, redone on the library's handle ---------------------- */

static void *symbol(void *lib, const char *name, const char *suffix)
{
    char full[64];
    snprintf(full, sizeof full, "%s%s", name, suffix);
    return dlsym(lib, full);
}

/* The first suffix, in LBT's order (the hint first), under which isamax_ or dpotrf_ exists. */
static const char *detect_suffix(void *lib, const char *hint)
{
    const char *suffixes[] = {hint, "", "_", "__", "64", "_64", "64_", "_64_", "_64__", "__64___"};
    const char *probes[] = {"isamax_", "dpotrf_"};
    for (int p = 0; p < 2; p++)
        for (size_t s = 0; s < sizeof suffixes / sizeof *suffixes; s++)
            if (suffixes[s] != NULL && symbol(lib, probes[p], suffixes[s]) != NULL)
                return suffixes[s];
    return NULL;
}

/* LBT calls isamax through 64-bit pointers: an LP64 isamax reads N's low half, 3, and answers
 * 2; an ILP64 one reads N < 0 and answers 0. Returns 32, 64 or 0 (unknown). */
static int detect_interface(void *lib, const char *suffix)
{
    if (symbol(lib, "ilaver_", suffix) != NULL)
        return 0; /* LBT would ask ilaver first; this library has none */
    int64_t (*isamax)(const int64_t *, const float *, const int64_t *) =
        (int64_t(*)(const int64_t *, const float *, const int64_t *))symbol(lib, "isamax_", suffix);
    if (isamax == NULL)
        return 0;
    const int64_t n = (int64_t)0xffffffff00000003ull, incx = 1;
    const float x[3] = {1, 2, 1};
    const int64_t found = isamax(&n, x, &incx) & 0xffffffff;
    return found == 2 ? 32 : found == 0 ? 64 : 0;
}

typedef double complex zdotc_normal_fn(const int64_t *, const double complex *, const int64_t *,
                                       const double complex *, const int64_t *);
typedef void zdotc_argument_fn(double complex *, const int64_t *, const double complex *,
                               const int64_t *, const double complex *, const int64_t *);
typedef float complex cdotc_normal_fn(const int64_t *, const float complex *, const int64_t *,
                                      const float complex *, const int64_t *);
typedef void cdotc_argument_fn(float complex *, const int64_t *, const float complex *,
                               const int64_t *, const float complex *, const int64_t *);
typedef float sdot_fn(const int64_t *, const float *, const int64_t *, const float *,
                      const int64_t *);

/* Complex results returned in registers ("normal"), as gfortran's: called first as if they
 * wrote the result through a first argument, they must leave it alone (they read it as N <= 0),
 * then return 0 for N = 0. */
static int complex_return_is_normal(void *lib, const char *suffix)
{
    void *z = symbol(lib, "zdotc_", suffix), *c = symbol(lib, "cdotc_", suffix);
    if (z == NULL || c == NULL)
        return 0;
    const int64_t zero = 0, minus_one = -1;
    const double complex zz = 0;
    const float complex cz = 0;
    double complex zresult = I;
    ((zdotc_argument_fn *)z)(&zresult, &zero, &zz, &zero, &zz, &zero);
    float complex cresult;
    memcpy(&cresult, &minus_one, sizeof cresult);
    ((cdotc_argument_fn *)c)(&cresult, &zero, &cz, &zero, &cz, &zero);
    const int untouched = zresult == I && memcmp(&cresult, &minus_one, sizeof cresult) == 0;
    return untouched && ((zdotc_normal_fn *)z)(&zero, &zz, &zero, &zz, &zero) == 0 &&
           ((cdotc_normal_fn *)c)(&zero, &cz, &zero, &cz, &zero) == 0;
}

static int sdot_returns_float(void *lib, const char *suffix)
{
    sdot_fn *sdot = (sdot_fn *)symbol(lib, "sdot_", suffix);
    const float a = 0.5f, b = 0.5f;
    const int64_t one = 1;
    return sdot != NULL && sdot(&one, &a, &one, &b, &one) == 0.25f;
}

static void test_recognition(void *lib, const char *hint, const char *want_suffix, int want_bits)
{
    const char *suffix = detect_suffix(lib, hint);
    char what[96];
    snprintf(what, sizeof what, "LBT suffix_hint=%s: suffix \"%s\", interface (bits)",
             hint ? hint : "none", suffix ? suffix : "(none)");
    const int bits = suffix ? detect_interface(lib, suffix) : 0;
    check(suffix != NULL && strcmp(suffix, want_suffix) == 0 && bits == want_bits, what, bits,
          want_bits);
    if (suffix == NULL)
        return;
    snprintf(what, sizeof what, "LBT suffix \"%s\": normal complex return, plain sdot", suffix);
    const int conventions =
        complex_return_is_normal(lib, suffix) && sdot_returns_float(lib, suffix);
    check(conventions, what, conventions, 1);
    const char *routines[] = {"sgemm_", "dgemm_", "sgetrf_", "dgetrf_", "sgetrs_", "dgetrs_",
                              "sgesv_", "dgesv_", "isamax_", "sdot_",   "cdotc_",  "zdotc_"};
    int found = 0;
    for (size_t i = 0; i < sizeof routines / sizeof *routines; i++)
        found += symbol(lib, routines[i], suffix) != NULL;
    snprintf(what, sizeof what, "LBT suffix \"%s\": routines found to forward", suffix);
    check(found == 12, what, found, 12);
}

int main(int argc, char **argv)
{
    test_isamax();
    test_dots();
    void *lib = argc > 1 ? dlopen(argv[1], RTLD_NOW | RTLD_LOCAL) : NULL;
    if (lib == NULL) {
        printf("FAIL cannot load %s: %s\n", argc > 1 ? argv[1] : "(no path given)", dlerror());
        return 1;
    }
    test_recognition(lib, NULL, "", 32);
    test_recognition(lib, "64_", "64_", 64);
    dlclose(lib);
    printf("%s\n", failures == 0 ? "ALL PASS" : "FAILED");
    return failures == 0 ? 0 : 1;
}
