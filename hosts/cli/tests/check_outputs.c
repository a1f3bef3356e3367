/* check_outputs.c — reads the files a pipeline wrote and checks their contents, for the ctest
 * cases of hosts/cli/CMakeLists.txt. Checks are separated by "--":
 *     png FILE CX CY SCALE MAX_ITERATIONS f32|f64 [HEIGHT WIDTH]
 *                                                   every pixel against the scalar reference
 *                                                   (and the image's size)
 *     sequence FILE.npy START STEP TOLERANCE        x[k] = START + k STEP (row-major)
 *     shape FILE.npy EXTENT...                      the file's shape
 *     same FILE.npy FILE.csv                        the CSV holds the same numbers, exactly
 * Exits 0 when every check passes, 1 (with the reason) otherwise. */
#ifdef CHECK_OUTPUTS_PNG
#include <png.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats.h"
#include "pipeline.h"

static int fail(const char *fmt, const char *a, const char *b)
{
    fprintf(stderr, "check_outputs: ");
    fprintf(stderr, fmt, a, b);
    fputc('\n', stderr);
    return 1;
}

static double element(const struct fmt_tensor *t, int64_t k)
{
    switch (t->dtype) {
    case CLOPS_F32: return ((const float *)t->data)[k];
    case CLOPS_F64: return ((const double *)t->data)[k];
    case CLOPS_I32: return ((const int32_t *)t->data)[k];
    case CLOPS_U32: return ((const uint32_t *)t->data)[k];
    case CLOPS_U8: return ((const uint8_t *)t->data)[k];
    case CLOPS_I64: return (double)((const int64_t *)t->data)[k];
    default: return 0.0;
    }
}

static int64_t elements(const struct fmt_tensor *t)
{
    int64_t n = 1;
    for (int32_t i = 0; i < t->rank; i++)
        n *= t->shape[i];
    return n;
}

static int read_npy(const char *path, struct fmt_tensor *t)
{
    char err[512];
    if (fmt_read_npy(path, t, err, sizeof err) == 0)
        return 0;
    return fail("%s%s", err, "");
}

static int check_png(char **a, int n)
{
    if (n != 6 && n != 8)
        return fail("png needs FILE CX CY SCALE MAX_ITERATIONS PRECISION [HEIGHT WIDTH]%s%s", "",
                    "");
#ifndef CHECK_OUTPUTS_PNG
    return fail("%s: cannot read PNG: built without libpng%s", a[0], "");
#else
    png_image image = {.version = PNG_IMAGE_VERSION};
    if (!png_image_begin_read_from_file(&image, a[0]))
        return fail("%s: %s", a[0], image.message);
    image.format = PNG_FORMAT_RGBA;
    uint8_t *rgba = malloc(PNG_IMAGE_SIZE(image));
    if (rgba == NULL || !png_image_finish_read(&image, NULL, rgba, 0, NULL)) {
        free(rgba);
        return fail("%s: %s", a[0], image.message);
    }
    struct mandel_view v = {strtod(a[1], NULL), strtod(a[2], NULL), strtod(a[3], NULL),
                            (uint32_t)strtoul(a[4], NULL, 10), strcmp(a[5], "f64") == 0};
    int64_t h = image.height, w = image.width, wrong = 0;
    for (int64_t i = 0; i < h; i++)
        for (int64_t j = 0; j < w; j++) {
            uint8_t want[4];
            mandel_colour(mandel_count(i, j, h, w, &v), v.max_iterations, want);
            wrong += memcmp(&rgba[(i * w + j) * 4], want, 4) != 0;
        }
    free(rgba);
    printf("png %s: %lldx%lld, %lld pixels differ from the reference\n", a[0], (long long)h,
           (long long)w, (long long)wrong);
    if (n == 8 && (h != strtoll(a[6], NULL, 10) || w != strtoll(a[7], NULL, 10)))
        return fail("%s: the image is not %s", a[0], "HEIGHT x WIDTH as expected");
    return wrong != 0;
#endif
}

static int check_sequence(char **a, int n)
{
    struct fmt_tensor t = {0};
    if (n != 4)
        return fail("sequence needs FILE START STEP TOLERANCE%s%s", "", "");
    if (read_npy(a[0], &t) != 0)
        return 1;
    double start = strtod(a[1], NULL), step = strtod(a[2], NULL), tol = strtod(a[3], NULL);
    double worst = 0.0;
    for (int64_t k = 0; k < elements(&t); k++) {
        double d = element(&t, k) - (start + step * (double)k);
        worst = d < 0 ? (-d > worst ? -d : worst) : (d > worst ? d : worst);
    }
    printf("sequence %s: %lld elements, largest difference %.3e\n", a[0], (long long)elements(&t),
           worst);
    fmt_tensor_free(&t);
    return !(worst <= tol);
}

static int check_shape(char **a, int n)
{
    struct fmt_tensor t = {0};
    if (n < 1 || read_npy(a[0], &t) != 0)
        return 1;
    int ok = t.rank == n - 1;
    for (int i = 0; ok && i < t.rank; i++)
        ok = t.shape[i] == strtoll(a[1 + i], NULL, 10);
    printf("shape %s: rank %d, %s\n", a[0], (int)t.rank, ok ? "as expected" : "NOT as expected");
    fmt_tensor_free(&t);
    return !ok;
}

static int check_same(char **a, int n)
{
    struct fmt_tensor t = {0};
    if (n != 2 || read_npy(a[0], &t) != 0)
        return 1;
    FILE *csv = fopen(a[1], "r");
    if (csv == NULL) {
        fmt_tensor_free(&t);
        return fail("cannot open %s%s", a[1], "");
    }
    int64_t k = 0, wrong = 0;
    double x;
    while (fscanf(csv, " %lf ,", &x) == 1) {
        wrong += k >= elements(&t) || x != element(&t, k);
        k++;
    }
    fclose(csv);
    printf("same %s %s: %lld numbers, %lld differ\n", a[0], a[1], (long long)k, (long long)wrong);
    int bad = wrong != 0 || k != elements(&t);
    fmt_tensor_free(&t);
    return bad;
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*check)(char **args, int count);
    } checks[] = {
        {"png", check_png},
        {"sequence", check_sequence},
        {"shape", check_shape},
        {"same", check_same},
    };
    int failed = 0;
    for (int i = 1; i < argc;) {
        int end = i + 1;
        while (end < argc && strcmp(argv[end], "--") != 0)
            end++;
        size_t c = 0;
        while (c < sizeof checks / sizeof checks[0] && strcmp(checks[c].name, argv[i]) != 0)
            c++;
        if (c == sizeof checks / sizeof checks[0])
            failed += fail("unknown check '%s'%s", argv[i], "");
        else
            failed += checks[c].check(argv + i + 1, end - i - 1) != 0;
        i = end + 1;
    }
    return failed != 0;
}
