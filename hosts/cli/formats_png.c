/* formats_png.c — PNG files, written only, through libpng: u8 gray, RGB and RGBA images and u32
 * RGBA words, 8 bits per channel. */
#include <png.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats.h"
#include "formats_internal.h"

/* How a tensor maps to PNG pixels. */
struct png_layout {
    uint32_t height, width;
    int channels;   /* bytes per pixel in the file */
    int color_type; /* PNG_COLOR_TYPE_* */
    int words;      /* u32 RGBA words, unpacked per row */
};

static int png_layout_of(const struct fmt_tensor *t, struct png_layout *l, char *why,
                         size_t whysize)
{
    char text[128];
    fmt_describe(text, sizeof text, t->dtype, t->rank, t->shape);
    memset(l, 0, sizeof *l);
    if (t->dtype == CLOPS_U8 && t->rank == 3 && (t->shape[2] == 3 || t->shape[2] == 4)) {
        l->channels = (int)t->shape[2];
        l->color_type = l->channels == 4 ? PNG_COLOR_TYPE_RGBA : PNG_COLOR_TYPE_RGB;
    } else if (t->dtype == CLOPS_U8 && t->rank == 2) {
        l->channels = 1;
        l->color_type = PNG_COLOR_TYPE_GRAY;
    } else if (t->dtype == CLOPS_U32 && t->rank == 2) {
        l->channels = 4;
        l->color_type = PNG_COLOR_TYPE_RGBA;
        l->words = 1;
    } else {
        return fmt_fail(why, whysize,
                        "cannot write %s as PNG; expected u8 H x W x 4 (RGBA), u8 H x "
                        "W x 3 (RGB), u8 H x W (gray) or u32 H x W (RGBA words)",
                        text);
    }
    /* The PNG format's limit on either extent is 2^31 - 1. */
    if (t->shape[0] < 1 || t->shape[1] < 1 || t->shape[0] > INT32_MAX || t->shape[1] > INT32_MAX)
        return fmt_fail(why, whysize,
                        "cannot write %s as PNG: height and width must be 1 to 2^31 - 1", text);
    l->height = (uint32_t)t->shape[0];
    l->width = (uint32_t)t->shape[1];
    return 0;
}

struct png_failure {
    char message[200];
};

/* libpng calls this on an error and must not return: the message is kept and control goes
 * back to the setjmp() in emit_png. */
static void png_on_error(png_structp png, png_const_charp message)
{
    struct png_failure *failure = png_get_error_ptr(png);
    snprintf(failure->message, sizeof failure->message, "%s", message);
    png_longjmp(png, 1);
}

/* libpng's warnings would go to stderr; this module never prints. */
static void png_on_warning(png_structp png, png_const_charp message)
{
    (void)png;
    (void)message;
}

/* Row `y` of u32 RGBA words as R, G, B, A bytes: by shifts, so the host's byte order does not
 * matter. */
static void unpack_words(unsigned char *row, const uint32_t *words, uint32_t width)
{
    for (uint32_t x = 0; x < width; x++) {
        const uint32_t w = words[x];
        row[4 * x] = (unsigned char)(w & 0xff);
        row[4 * x + 1] = (unsigned char)(w >> 8 & 0xff);
        row[4 * x + 2] = (unsigned char)(w >> 16 & 0xff);
        row[4 * x + 3] = (unsigned char)(w >> 24);
    }
}

static int emit_png(FILE *f, const struct fmt_tensor *t, int64_t elements, char *why,
                    size_t whysize)
{
    (void)elements;
    struct png_layout layout;
    if (png_layout_of(t, &layout, why, whysize) != 0)
        return -1;
    const size_t row_bytes = (size_t)layout.width * (size_t)layout.channels;
    struct png_failure failure = {"out of memory"};
    unsigned char *row = layout.words ? malloc(row_bytes) : NULL;
    png_structp png =
        png_create_write_struct(PNG_LIBPNG_VER_STRING, &failure, png_on_error, png_on_warning);
    png_infop info = png != NULL ? png_create_info_struct(png) : NULL;
    if (png == NULL || info == NULL || (layout.words && row == NULL)) {
        png_destroy_write_struct(&png, &info);
        free(row);
        return fmt_fail(why, whysize, "libpng: out of memory");
    }
    /* Everything the error path uses (png, info, row, failure) is set before setjmp() and not
     * changed after it, so none of it needs to be volatile (C11 7.13.2.1). */
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        free(row);
        return fmt_fail(why, whysize, "libpng: %s", failure.message);
    }
    png_init_io(png, f);
    png_set_IHDR(png, info, layout.width, layout.height, 8, layout.color_type, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (uint32_t y = 0; y < layout.height; y++) {
        if (layout.words) {
            unpack_words(row, (const uint32_t *)t->data + (size_t)y * layout.width, layout.width);
            png_write_row(png, row);
        } else {
            png_write_row(png, (const unsigned char *)t->data + (size_t)y * row_bytes);
        }
    }
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    free(row);
    return 0;
}

const char *const fmt_png_unavailable = NULL;

int fmt_write_png(const char *path, const struct fmt_tensor *t, char *err, size_t errsize)
{
    int64_t elements = 0;
    struct png_layout layout;
    char why[256];
    /* Checked before the temporary file is made: a bad shape is the caller's error, not I/O. */
    if (fmt_check_tensor(path, t, &elements, err, errsize) != 0)
        return -1;
    if (png_layout_of(t, &layout, why, sizeof why) != 0)
        return fmt_fail(err, errsize, "%s: %s", path, why);
    return fmt_write_atomic(path, t, emit_png, err, errsize);
}
