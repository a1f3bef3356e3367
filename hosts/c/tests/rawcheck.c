/* rawcheck.c — the test helper of clops-call: writes raw f32/f64 files from numbers, checks a
 * raw file against expected numbers, and checks that printed tensors satisfy c = alpha a b.
 *   rawcheck write PATH DTYPE V...
 *   rawcheck expect PATH DTYPE TOL V...      (|got - expected| <= TOL for every element)
 *   rawcheck gemm-printed FILE ALPHA TOL     (FILE: clops-call --print a --print b --print c) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_f32(const char *dtype)
{
    return strcmp(dtype, "f32") == 0;
}

static int write_raw(const char *path, const char *dtype, int n, char **values)
{
    FILE *f = fopen(path, "wb");
    for (int i = 0; f != NULL && i < n; i++) {
        double d = strtod(values[i], NULL);
        float s = (float)d;
        fwrite(is_f32(dtype) ? (void *)&s : (void *)&d, is_f32(dtype) ? 4 : 8, 1, f);
    }
    return f != NULL && fclose(f) == 0 ? 0 : 1;
}

static int expect_raw(const char *path, const char *dtype, double tol, int n, char **values)
{
    FILE *f = fopen(path, "rb");
    int bad = f == NULL, i = 0;
    for (; f != NULL && i < n; i++) {
        double d = 0;
        float s = 0;
        if (fread(is_f32(dtype) ? (void *)&s : (void *)&d, is_f32(dtype) ? 4 : 8, 1, f) != 1)
            break;
        double got = is_f32(dtype) ? s : d, want = strtod(values[i], NULL);
        if (!(fabs(got - want) <= tol)) {
            printf("%s[%d] = %.17g, expected %.17g\n", path, i, got, want);
            bad = 1;
        }
    }
    if (f != NULL && (i != n || fgetc(f) != EOF)) {
        printf("%s: expected exactly %d elements\n", path, n);
        bad = 1;
    }
    if (f != NULL)
        fclose(f);
    printf("%s: %s\n", path, bad ? "MISMATCH" : "all elements as expected");
    return bad;
}

struct printed {
    long long rows, cols;
    double *v;
};

/* Finds "NAME = DTYPE RxC" in the text and reads the R*C numbers after it. */
static int read_printed(FILE *f, const char *name, struct printed *m)
{
    char word[64], eq[4], dtype[8];
    rewind(f);
    while (fscanf(f, "%63s", word) == 1) {
        if (strcmp(word, name) != 0 ||
            fscanf(f, "%3s %7s %lldx%lld", eq, dtype, &m->rows, &m->cols) != 4 ||
            strcmp(eq, "=") != 0)
            continue;
        m->v = calloc((size_t)(m->rows * m->cols), sizeof *m->v);
        for (long long i = 0; i < m->rows * m->cols; i++)
            if (fscanf(f, "%lf", &m->v[i]) != 1)
                return -1;
        return 0;
    }
    return -1;
}

static int check_gemm_printed(const char *path, double alpha, double tol)
{
    FILE *f = fopen(path, "r");
    struct printed a = {0}, b = {0}, c = {0};
    if (f == NULL || read_printed(f, "a", &a) || read_printed(f, "b", &b) ||
        read_printed(f, "c", &c) || a.cols != b.rows || c.rows != a.rows || c.cols != b.cols) {
        printf("%s: no printed a, b, c of matching shapes\n", path);
        return 1;
    }
    fclose(f);
    double worst = 0;
    for (long long i = 0; i < c.rows; i++)
        for (long long j = 0; j < c.cols; j++) {
            long double sum = 0;
            for (long long k = 0; k < a.cols; k++)
                sum += (long double)a.v[i * a.cols + k] * b.v[k * b.cols + j];
            worst = fmax(worst, fabs((double)(alpha * sum) - c.v[i * c.cols + j]));
        }
    printf("max |c - alpha a b| = %.3g over %lldx%lld (tolerance %g)\n", worst, c.rows, c.cols,
           tol);
    free(a.v);
    free(b.v);
    free(c.v);
    return worst <= tol && c.rows * c.cols > 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && strcmp(argv[1], "write") == 0)
        return write_raw(argv[2], argv[3], argc - 4, argv + 4);
    if (argc >= 5 && strcmp(argv[1], "expect") == 0)
        return expect_raw(argv[2], argv[3], strtod(argv[4], NULL), argc - 5, argv + 5);
    if (argc == 5 && strcmp(argv[1], "gemm-printed") == 0)
        return check_gemm_printed(argv[2], strtod(argv[3], NULL), strtod(argv[4], NULL));
    fprintf(stderr, "usage: see the comment at the top of rawcheck.c\n");
    return 2;
}
