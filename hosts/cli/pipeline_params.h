/* pipeline_params.h — a pipeline's params (the `params` section, configs/pipelines/demo.cfg):
 * typed values, the declared params, and how a value is written into the file's text where a
 * `${...}` stood (pipeline_params.c). */
#ifndef CLOPS_CLI_PIPELINE_PARAMS_H
#define CLOPS_CLI_PIPELINE_PARAMS_H

#include <libconfig.h>
#include <stddef.h>
#include <stdint.h>

enum param_type { PARAM_INT = 0, PARAM_FLOAT = 1, PARAM_STRING = 2, PARAM_BOOL = 3 };

/* One value of a param. `s` is owned by the value (param_value_copy, param_value_free). */
struct param_value {
    int type;  /* enum param_type */
    int64_t i; /* PARAM_INT; PARAM_BOOL: 0 or 1 */
    double d;  /* PARAM_FLOAT */
    char *s;   /* PARAM_STRING */
};

struct param {
    char *name;               /* owned */
    int line;                 /* of its declaration in `params` */
    struct param_value value; /* the default, or the value --set params.NAME gave */
};

/* The declared params, in the order of the file. */
struct params {
    struct param *items;
    int count;
};

/* "an int", "a float", "a string", "a bool". */
const char *param_type_name(int type);
/* A scalar setting's value (ints of either width, floats, strings, bools): 0, or -1 when the
 * setting is not a scalar. */
int param_value_from_setting(const config_setting_t *s, struct param_value *v);
/* Converts `v` to `type` where no information is lost (an int where a float is declared): 0,
 * or -1 when the types do not fit (then `v` is unchanged). */
int param_value_convert(struct param_value *v, int type);
void param_value_copy(struct param_value *dst, const struct param_value *src);
void param_value_free(struct param_value *v);
int param_value_equal(const struct param_value *a, const struct param_value *b);

/* The value as text, allocated: as a libconfig literal (42, 5000000000L, 2.5, "a \"b\"",
 * true) when `literal`, else as it reads inside a string (42, 2.5, a \"b\", true; the string
 * escaped for libconfig). Never contains a line break, so lines keep their numbers. */
char *param_value_text(const struct param_value *v, int literal);
/* The shortest decimal that reads back as `x` (0.1, not 0.10000000000000001). */
const char *format_shortest(double x, char *out, size_t size);

/* The index of the param `name`, or -1. */
int params_find(const struct params *p, const char *name);
/* "n, tol, name" or "none are declared". */
void params_names(const struct params *p, char *out, size_t size);
/* A copy of every param's value, in order (params_values_free). */
struct param_value *params_values(const struct params *p);
void params_values_free(struct param_value *values, int count);
void params_free(struct params *p);

#endif
