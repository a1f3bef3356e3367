// test_clops.cpp — the C++ binding against libclops: gemm against a long-double loop reference
// in every layout, lu + lu_solve and solve against LAPACK's residual bound, clops::error on bad
// arguments (status and message), generic invoke, device buffers (on device 0 and on device 1 of
// a pool of two: PoCL's, POCL_DEVICES naming two pthread devices), move-only ownership, and
// (ABI 1.4) gemms on two streams, futures, cancellation, timeouts and an event past its stream;
// gemm on registered host memory, a call outliving its registration, registrations' ownership;
// interop on an OpenCL context, queue and buffers this test makes itself (a pool on them, a gemm
// on wrapped cl_mem objects, ownership), and the device memory statistics' byte counts.
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "clops.hpp"

namespace
{
// setenv, which Windows spells _putenv_s.
void set_env(const char *name, const char *value)
{
#ifdef _WIN32
    _putenv_s(name, value);
#else
    setenv(name, value, 1);
#endif
}
} // namespace

namespace
{

// LAPACK's test suite accepts scaled residuals below 30.
constexpr double residual_bound = 30;

void expect(bool condition, const std::string &what)
{
    if (!condition) {
        std::printf("FAIL: %s\n", what.c_str());
        std::exit(1);
    }
}

// `call` must throw clops::error with `status` and a message that contains `fragment` ("": any
// message); `throws` names the failure when it returns, `what` when the error is another.
template <class Call>
void expect_error(Call call, int32_t status, const char *fragment, const std::string &throws,
                  const std::string &what)
{
    try {
        call();
        expect(false, throws);
    } catch (const clops::error &e) {
        expect(e.status() == status && e.message().find(fragment) != std::string::npos, what);
    }
}

void pass(const char *name, double value)
{
    std::printf("%s: PASS, scaled error %.3e\n", name, value);
}

std::mt19937_64 rng(20261123);

template <class T> std::vector<T> random_vector(std::size_t n)
{
    std::uniform_real_distribution<double> uniform(-1, 1);
    std::vector<T> v(n);
    for (T &x : v)
        x = static_cast<T>(uniform(rng));
    return v;
}

std::size_t idx(int64_t i)
{
    return static_cast<std::size_t>(i);
}

// Element (i, j) of a matrix stored with strides (s0, s1).
template <class T> T at(const std::vector<T> &v, int64_t i, int64_t j, int64_t s0, int64_t s1)
{
    return v[idx(i * s0 + j * s1)];
}

// max |C - Cref| / (K ε (|α| max(|op(A)||op(B)|) + |β| max|C0|)), the reference in long double.
// op(A)(i, p) = a[i*as0 + p*as1]: a transposed view only swaps the strides given here.
template <class T>
double gemm_error(const std::vector<T> &a, int64_t as0, int64_t as1, const std::vector<T> &b,
                  int64_t bs0, int64_t bs1, const std::vector<T> &c0, const std::vector<T> &c,
                  int64_t cs0, int64_t cs1, int64_t m, int64_t n, int64_t k, double alpha,
                  double beta)
{
    long double max_error = 0, max_abs = 0, max_c0 = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            long double sum = 0, abs_sum = 0;
            for (int64_t p = 0; p < k; p++) {
                long double term = static_cast<long double>(at(a, i, p, as0, as1)) *
                                   static_cast<long double>(at(b, p, j, bs0, bs1));
                sum += term;
                abs_sum += std::fabs(term);
            }
            long double c_prior = at(c0, i, j, cs0, cs1);
            long double reference =
                static_cast<long double>(alpha) * sum + static_cast<long double>(beta) * c_prior;
            long double error =
                std::fabs(static_cast<long double>(at(c, i, j, cs0, cs1)) - reference);
            max_error = std::fmax(max_error, error);
            max_abs = std::fmax(max_abs, abs_sum);
            max_c0 = std::fmax(max_c0, std::fabs(c_prior));
        }
    double eps = std::numeric_limits<T>::epsilon();
    return static_cast<double>(max_error / (static_cast<long double>(k) * eps *
                                            (std::fabs(static_cast<long double>(alpha)) * max_abs +
                                             std::fabs(static_cast<long double>(beta)) * max_c0)));
}

void test_gemm_row_major_matches_loop(const clops::pool &pool)
{
    const int64_t m = 37, n = 41, k = 23;
    auto a = random_vector<double>(idx(m * k)), b = random_vector<double>(idx(k * n));
    auto c = random_vector<double>(idx(m * n));
    const auto c0 = c;
    pool.gemm(clops::view(a, m, k), clops::view(b, k, n), clops::view(c, m, n), -1.5, 0.75);
    double error = gemm_error(a, k, 1, b, n, 1, c0, c, n, 1, m, n, k, -1.5, 0.75);
    expect(error < 2, "gemm row-major matches the loop reference");
    pass("gemm_row_major_matches_loop", error);
}

// Column-major A and C (Fortran order), and B used through a transposed view, f32.
void test_gemm_column_major_transposed_f32(const clops::pool &pool)
{
    const int64_t m = 29, n = 17, k = 50;
    auto a = random_vector<float>(idx(m * k));  // m×k column-major
    auto bt = random_vector<float>(idx(n * k)); // n×k row-major: B = btᵀ, k×n
    auto c = random_vector<float>(idx(m * n));  // m×n column-major
    const auto c0 = c;
    const auto &a_const = a; // a read-only view serves an input
    pool.gemm(clops::view(a_const, m, k, clops::layout::column_major), clops::view(bt, n, k).t(),
              clops::view(c, m, n, clops::layout::column_major), 2.0, 1.0);
    double error = gemm_error(a, 1, m, bt, 1, k, c0, c, 1, m, m, n, k, 2.0, 1.0);
    expect(error < 2, "gemm column-major / transposed f32 matches the loop reference");
    pass("gemm_column_major_transposed_f32", error);
}

// The trans flags, and a submatrix with a leading dimension larger than its width.
void test_gemm_trans_flags_and_leading_dimension(const clops::pool &pool)
{
    const int64_t m = 19, n = 13, k = 31, lda = 40;
    auto a = random_vector<double>(idx(k * lda));    // Aᵀ stored k×m row-major, ld 40
    auto b = random_vector<double>(idx(n * k));      // Bᵀ stored n×k
    std::vector<double> c(idx(m * n), std::nan("")); // beta = 0: NaN never read
    const std::vector<double> c0(c.size(), 0.0);
    pool.gemm(clops::view(a, k, m, clops::layout::row_major, lda), clops::view(b, n, k),
              clops::view(c, m, n), 1.0, 0.0, clops::trans::transpose, clops::trans::transpose);
    double error = gemm_error(a, 1, lda, b, 1, k, c0, c, n, 1, m, n, k, 1.0, 0.0);
    expect(error < 2, "gemm with trans flags and ld matches the loop reference");
    pass("gemm_trans_flags_and_leading_dimension", error);
}

// ‖b − A x‖₁ / (N ‖A‖₁ ‖x‖₁ ε) per column, the largest (LAPACK's xGET02); row-major N×NRHS.
double solve_residual(const std::vector<double> &a, const std::vector<double> &x,
                      const std::vector<double> &b, int64_t n, int64_t nrhs, bool transposed)
{
    double norm_a = 0;
    for (int64_t j = 0; j < n; j++) {
        double column = 0;
        for (int64_t i = 0; i < n; i++)
            column += std::fabs(transposed ? a[idx(j * n + i)] : a[idx(i * n + j)]);
        norm_a = std::fmax(norm_a, column);
    }
    double worst = 0;
    for (int64_t r = 0; r < nrhs; r++) {
        long double residual = 0, norm_x = 0;
        for (int64_t i = 0; i < n; i++) {
            long double ax = 0;
            for (int64_t j = 0; j < n; j++)
                ax += static_cast<long double>(transposed ? a[idx(j * n + i)] : a[idx(i * n + j)]) *
                      x[idx(j * nrhs + r)];
            residual += std::fabs(b[idx(i * nrhs + r)] - ax);
            norm_x += std::fabs(x[idx(i * nrhs + r)]);
        }
        worst =
            std::fmax(worst, static_cast<double>(residual / (static_cast<long double>(n) * norm_a *
                                                             norm_x * 2.220446049250313e-16L)));
    }
    return worst;
}

void test_lu_then_lu_solve_residual(const clops::pool &pool)
{
    const int64_t n = 50, nrhs = 3;
    const auto a0 = random_vector<double>(idx(n * n));
    const auto b0 = random_vector<double>(idx(n * nrhs));
    auto factors = a0, x = b0;
    std::vector<int32_t> ipiv(idx(n), -1);
    int32_t info = pool.lu(clops::view(factors, n, n), clops::view(ipiv));
    expect(info == 0, "lu info = 0 on a random matrix");
    for (int64_t i = 0; i < n; i++)
        expect(ipiv[idx(i)] >= i + 1 && ipiv[idx(i)] <= n,
               "lu pivots are 1-based, i <= ipiv(i) <= N");
    pool.lu_solve(clops::view(factors, n, n), clops::view(ipiv), clops::view(x, n, nrhs));
    double error = solve_residual(a0, x, b0, n, nrhs, false);
    expect(error < residual_bound, "lu + lu_solve residual");
    pass("lu_then_lu_solve_residual", error);

    x = b0;
    pool.lu_solve(clops::view(factors, n, n), clops::view(ipiv), clops::view(x, n, nrhs),
                  clops::trans::transpose);
    error = solve_residual(a0, x, b0, n, nrhs, true);
    expect(error < residual_bound, "lu + lu_solve(transpose) residual");
    pass("lu_then_lu_solve_transposed_residual", error);
}

void test_solve_residual(const clops::pool &pool)
{
    const int64_t n = 50, nrhs = 2;
    const auto a0 = random_vector<double>(idx(n * n));
    const auto b0 = random_vector<double>(idx(n * nrhs));
    auto a = a0, x = b0;
    std::vector<int32_t> ipiv(idx(n));
    int32_t info = pool.solve(clops::view(a, n, n), clops::view(x, n, nrhs), clops::view(ipiv));
    expect(info == 0, "solve info = 0");
    double error = solve_residual(a0, x, b0, n, nrhs, false);
    expect(error < residual_bound, "solve residual");
    pass("solve_residual", error);

    // A zero third column: info = 3 as LAPACK's, b untouched.
    std::vector<double> singular = a0, y = b0;
    for (int64_t i = 0; i < n; i++)
        singular[idx(i * n + 2)] = 0;
    info = pool.solve(clops::view(singular, n, n), clops::view(y, n, nrhs), clops::view(ipiv));
    expect(info == 3, "solve info = 3 for a zero third column");
    expect(y == b0, "b untouched when A is singular");
    std::printf("solve_singular_reports_info: PASS (info = %d)\n", static_cast<int>(info));
}

void test_bad_arguments_throw_status_and_message(const clops::pool &pool)
{
    std::vector<double> a(20, 1.0), b(18, 1.0), c(30, 7.0);
    try {
        pool.gemm(clops::view(a, 5, 4), clops::view(b, 3, 6), clops::view(c, 5, 6));
        expect(false, "gemm 5x4 * 3x6 throws");
    } catch (const clops::error &e) {
        std::printf("  gemm 5x4 * 3x6 -> %s\n", e.what());
        expect(e.status() == CLOPS_ERR_INVALID_ARGUMENT, "status is CLOPS_ERR_INVALID_ARGUMENT");
        expect(e.status_name() == "CLOPS_ERR_INVALID_ARGUMENT", "status name");
        expect(e.message().find("gemm") != std::string::npos &&
                   e.message().find("'b'") != std::string::npos,
               "the message names the operator and the parameter");
        expect(c == std::vector<double>(30, 7.0), "a rejected call changes nothing");
    }
    // The binding's own checks: a view that does not fit its vector, a read-only output.
    expect_error([&] { (void)clops::view(a, 5, 5); }, CLOPS_ERR_INVALID_ARGUMENT, "20",
                 "a 5x5 view of 20 elements throws",
                 "view that does not fit: INVALID_ARGUMENT naming the size");
    const std::vector<double> &c_const = c;
    expect_error(
        [&] { pool.gemm(clops::view(a, 5, 4), clops::view(a, 4, 5), clops::view(c_const, 5, 5)); },
        CLOPS_ERR_INVALID_ARGUMENT, "'c'", "a read-only C throws",
        "read-only output: INVALID_ARGUMENT naming c");
    expect_error([&] { pool.invoke("gemmm", {}); }, CLOPS_ERR_NOT_FOUND, "",
                 "an unknown operator throws", "unknown operator: CLOPS_ERR_NOT_FOUND");
    std::printf("bad_arguments_throw_status_and_message: PASS\n");
}

// C = 2 A Bᵀ + 1 C by name, numbers given as int and double, an enum as its string.
void test_invoke_by_name(const clops::pool &pool)
{
    const int64_t m = 11, n = 9, k = 7;
    auto a = random_vector<double>(idx(m * k)), bt = random_vector<double>(idx(n * k));
    auto c = random_vector<double>(idx(m * n));
    const auto c0 = c;
    pool.invoke("gemm", {{"a", clops::view(a, m, k)},
                         {"b", clops::view(bt, n, k)},
                         {"c", clops::view(c, m, n)},
                         {"alpha", 2.0},
                         {"beta", 1},
                         {"trans_b", "transpose"}});
    double error = gemm_error(a, k, 1, bt, 1, k, c0, c, n, 1, m, n, k, 2.0, 1.0);
    expect(error < 2, "invoke(gemm) matches the loop reference");
    try {
        pool.invoke("gemm", {{"a", clops::view(a, m, k)}, {"gamma", 1.0}});
        expect(false, "an unknown parameter throws");
    } catch (const clops::error &e) {
        expect(e.message().find("gamma") != std::string::npos, "the message names 'gamma'");
    }
    pass("invoke_by_name", error);
}

// ABI 1.2: descriptors state their parameters' size and the binding walks them with it;
// pool::invoke goes through invoke_sized (test_invoke_by_name), which this plugin has.
void test_sized_arrays(const clops::library &lib)
{
    expect(lib.api().abi_minor >= 2 && CLOPS_API_HAS(&lib.api(), invoke_sized),
           "the table has invoke_sized");
    const clops_op &gemm = lib.op("gemm");
    expect(CLOPS_OP_HAS(&gemm, param_size) && gemm.param_size == sizeof(clops_param),
           "gemm's descriptor states sizeof(clops_param)");
    const std::vector<std::string> names = {"a",       "b",     "c",    "trans_a",
                                            "trans_b", "alpha", "beta", "precision"};
    expect(gemm.param_count == static_cast<int32_t>(names.size()), "gemm has 8 parameters");
    for (int32_t i = 0; i < gemm.param_count; i++)
        expect(names[idx(i)] == clops_op_param(&gemm, i)->name,
               "gemm's parameter " + names[idx(i)]);
    std::printf("sized_arrays: PASS\n");
}

// Operands in device buffers; the buffer keeps the pool alive after the pool object is reset.
void test_device_buffers(clops::library &lib)
{
    const int64_t m = 16, n = 12, k = 10;
    auto a = random_vector<double>(idx(m * k)), b = random_vector<double>(idx(k * n));
    std::vector<double> c(idx(m * n), 0.0), c0 = c;
    clops::pool pool = lib.create_pool();
    clops::buffer da = pool.create_buffer(m * k * 8), db = pool.create_buffer(k * n * 8);
    clops::buffer dc = pool.create_buffer(m * n * 8);
    expect(dc.size() == m * n * 8, "buffer_size");
    da.upload(a);
    db.upload(b);
    pool.gemm(da.matrix<double>(m, k), db.matrix<double>(k, n), dc.matrix<double>(m, n));
    pool.reset(); // the buffers still hold the pool
    dc.download(c);
    double error = gemm_error(a, k, 1, b, n, 1, c0, c, n, 1, m, n, k, 1.0, 0.0);
    expect(error < 2, "gemm on device buffers matches the loop reference");
    clops::buffer moved = std::move(dc);
    expect(!dc && moved, "a moved-from buffer is empty");
    pass("device_buffers", error);
}

// Two GPUs, or PoCL's two CPU devices (POCL_DEVICES, set by main()); else the default pool.
clops::pool pool_of_two_devices_or_one(const clops::library &lib)
{
    for (const char *kind : {"gpu", "cpu"})
        try {
            return lib.create_pool_from_string(std::string("devices = ( { type = \"") + kind +
                                               "\"; }, { type = \"" + kind +
                                               "\"; index = 1; } ); cpu_fallback = false;");
        } catch (const clops::error &) {
        }
    return lib.create_pool();
}

// create_buffer(bytes, device) (buffer_create_on): random doubles round-trip on device 0 and on
// the pool's last device (device 1 where it has two), the buffer reporting where it lives; a
// gemm on three buffers of that device matches the long-double reference (it runs there,
// whatever device gemm is configured on); device 99 throws NOT_FOUND naming 'device'.
void test_buffers_on_a_device(const clops::library &lib)
{
    clops::pool pool = pool_of_two_devices_or_one(lib);
    double worst = 0;
    for (int32_t device : {0, pool.device_count() - 1}) {
        const int64_t m = 37, n = 23, k = 41;
        auto a = random_vector<double>(idx(m * k)), b = random_vector<double>(idx(k * n));
        auto c0 = random_vector<double>(idx(m * n));
        std::vector<double> c(c0.size()), back(a.size());
        clops::buffer da = pool.create_buffer(m * k * 8, device);
        clops::buffer db = pool.create_buffer(k * n * 8, device);
        clops::buffer dc = pool.create_buffer(m * n * 8, device);
        expect(da.device() == device && dc.device() == device && da.size() == m * k * 8,
               "a buffer of device " + std::to_string(device) + " lives there");
        da.upload(a);
        da.download(back);
        expect(back == a, "random doubles round-trip on device " + std::to_string(device));
        if (!pool.device_info(device).fp64)
            continue;
        db.upload(b);
        dc.upload(c0);
        pool.gemm(da.matrix<double>(m, k), db.matrix<double>(k, n), dc.matrix<double>(m, n), -0.75,
                  1.5);
        dc.download(c);
        const double error = gemm_error(a, k, 1, b, n, 1, c0, c, n, 1, m, n, k, -0.75, 1.5);
        expect(error < 2, "gemm on buffers of device " + std::to_string(device) +
                              " matches the loop reference");
        worst = std::fmax(worst, error);
    }
    expect_error([&] { (void)pool.create_buffer(64, 99); }, CLOPS_ERR_NOT_FOUND, "'device' = 99",
                 "create_buffer on device 99 returns",
                 "create_buffer(64, 99): NOT_FOUND naming 'device'");
    std::printf("buffers_on_a_device: PASS on %d device(s), scaled error %.3e\n",
                pool.device_count(), worst);
}

// Move-only ownership: the moved-from pool is empty and its calls throw; the handle moved
// with it, so only the new owner releases it (a second release would be a double free, which
// the CLOPS_SANITIZE build reports). A pool outlives its library object.
// The rule that finds the plugin (hosts/common/loader.h): $CLOPS_LIBRARY is loaded alone, and
// one that does not load is an error naming the variable and the path, never a reason to load
// another plugin; a path given to library(path) is that file alone.
void test_library_rule_clops_library_alone()
{
    const char *set = std::getenv("CLOPS_LIBRARY");
    expect(set != nullptr && set[0] != '\0', "ctest sets CLOPS_LIBRARY");
    const std::string good = set;
    expect(clops::library().version() == clops::library(good).version(),
           "library() loads $CLOPS_LIBRARY");
    const std::string bad = "/nonexistent/clops-test/libclops.so.1";
    set_env("CLOPS_LIBRARY", bad.c_str());
    expect_error([] { clops::library lib; }, CLOPS_ERR_NOT_FOUND, bad.c_str(),
                 "library() loaded something when $CLOPS_LIBRARY names no file",
                 "a bad $CLOPS_LIBRARY: NOT_FOUND naming the path");
    try {
        clops::library lib;
    } catch (const clops::error &e) {
        expect(e.message().find("$CLOPS_LIBRARY") != std::string::npos,
               "a bad $CLOPS_LIBRARY's message names the variable: " + e.message());
    }
    set_env("CLOPS_LIBRARY", good.c_str());
    expect_error([&] { clops::library lib(bad); }, CLOPS_ERR_NOT_FOUND, bad.c_str(),
                 "library(path) loaded something else", "library(bad path): NOT_FOUND naming it");
    std::printf("library_rule_clops_library_alone: PASS\n");
}

void test_move_semantics()
{
    clops::pool outlives;
    {
        clops::library lib;
        clops::pool first = lib.create_pool();
        clops_pool *handle = first.get();
        expect(handle != nullptr && static_cast<bool>(first), "a created pool holds a handle");

        clops::pool second = std::move(first);
        expect(first.empty() && !first && first.get() == nullptr, "moved-from pool is empty");
        expect(second.get() == handle, "the handle moved");
        expect_error(
            [&] {
                std::vector<double> x(4, 1.0), y(4, 0.0);
                first.gemm(clops::view(x, 2, 2), clops::view(x, 2, 2), clops::view(y, 2, 2));
            },
            CLOPS_ERR_INVALID_ARGUMENT, "empty", "a call on a moved-from pool throws",
            "moved-from pool: INVALID_ARGUMENT, 'empty'");

        clops::pool third = lib.create_pool();
        third = std::move(second); // releases third's own pool, takes second's
        expect(second.empty() && third.get() == handle, "move assignment takes the handle");
        outlives = std::move(third);

        clops::library moved_lib = std::move(lib);
        expect(!lib && static_cast<bool>(moved_lib), "a moved-from library is empty");
    } // the library objects are gone; the plugin stays loaded for `outlives`
    std::vector<double> x = {1, 2, 3, 4}, y(4, 0.0);
    outlives.gemm(clops::view(x, 2, 2), clops::view(x, 2, 2), clops::view(y, 2, 2));
    expect(y == std::vector<double>({7, 10, 15, 22}), "a pool outlives its library object");
    std::printf("move_semantics: PASS\n");
}

// ---- Non-blocking calls (ABI 1.4) -------------------------------------------------------------

// One gemm C = A B (row-major, f64) with its operands, kept alive until its event is ready.
struct gemm_job {
    int64_t m, n, k;
    std::vector<double> a, b, c;
    gemm_job(int64_t m_, int64_t n_, int64_t k_)
        : m(m_), n(n_), k(k_), a(random_vector<double>(idx(m_ * k_))),
          b(random_vector<double>(idx(k_ * n_))), c(idx(m_ * n_), -7.0)
    {
    }
    clops::event submit(const clops::stream &s, const clops::events_after &after = {})
    {
        return s.gemm(clops::view(a, m, k), clops::view(b, k, n), clops::view(c, m, n), 1.0, 0.0,
                      clops::trans::none, clops::trans::none, after);
    }
    double error() const
    {
        const std::vector<double> zero(c.size(), 0.0);
        return gemm_error(a, k, 1, b, n, 1, zero, c, n, 1, m, n, k, 1.0, 0.0);
    }
    bool untouched() const
    {
        return c == std::vector<double>(c.size(), -7.0);
    }
};

// Three gemms on each of two streams, all submitted before any is waited for; every result
// matches the loop reference, read through a future on one stream and a wait on the other.
void test_gemms_on_two_streams_match_loop(const clops::pool &pool)
{
    clops::stream s1 = pool.create_stream(), s2 = pool.create_stream();
    std::vector<gemm_job> jobs;
    for (int64_t i = 0; i < 6; i++)
        jobs.emplace_back(23 + 7 * i, 31 - 3 * i, 17 + 5 * i);
    std::vector<clops::event> events;
    std::vector<std::future<void>> futures;
    for (std::size_t i = 0; i < jobs.size(); i++) {
        events.push_back(jobs[i].submit(i % 2 == 0 ? s1 : s2));
        if (i % 2 == 0)
            futures.push_back(events.back().future());
    }
    for (std::future<void> &f : futures)
        f.get();
    double worst = 0;
    for (std::size_t i = 0; i < jobs.size(); i++) {
        events[i].result();
        expect(events[i].state() == clops::event_state::complete && events[i].progress() == 1.0,
               "a completed call's event is complete, progress 1");
        worst = std::fmax(worst, jobs[i].error());
    }
    expect(worst < 2, "gemms on two streams match the loop reference");
    pass("gemms_on_two_streams_match_loop", worst);
}

// A second stream waits for the first's gemm into a device buffer (ordered by the event
// alone), and copies it out with buffer_copy; the download of the copy is the product.
void test_streams_ordered_by_events(const clops::pool &pool)
{
    const int64_t m = 19, n = 13, k = 29;
    auto a = random_vector<double>(idx(m * k)), b = random_vector<double>(idx(k * n));
    clops::buffer dc = pool.create_buffer(m * n * 8), copy = pool.create_buffer(m * n * 8);
    clops::stream s1 = pool.create_stream(), s2 = pool.create_stream();
    clops::event product =
        s1.gemm(clops::view(a, m, k), clops::view(b, k, n), dc.matrix<double>(m, n));
    clops::event copied = s2.copy(dc, 0, copy, 0, m * n * 8, {product});
    copied.result();
    std::vector<double> c(idx(m * n)), zero(c.size(), 0.0);
    copy.download(c);
    double error = gemm_error(a, k, 1, b, n, 1, zero, c, n, 1, m, n, k, 1.0, 0.0);
    expect(error < 2, "a copy ordered after a gemm on another stream holds the product");
    pass("streams_ordered_by_events", error);
}

// Holds the stream's completion thread (a callback must return soon; this one returns when the
// test lets it): calls behind it can start (three at most) but not finish, so one more stays
// queued, deterministically.
struct gate {
    std::promise<void> entered, open;
    std::shared_future<void> opened = open.get_future().share();
};

void hold_completions(clops_event *, int32_t, void *user)
{
    auto *g = static_cast<gate *>(user);
    g->entered.set_value();
    g->opened.wait();
}

// A call cancelled while queued: its wait with a timeout times out first, then its future and
// result() throw clops::error CLOPS_ERR_CANCELLED, and its host output is untouched; the calls
// around it complete.
void test_cancelled_call_throws(const clops::library &lib, const clops::pool &pool)
{
    clops::stream s = pool.create_stream();
    gemm_job first(5, 4, 3);
    clops::event e0 = first.submit(s);
    gate g;
    clops_event_callback_args hold{};
    hold.struct_size = sizeof hold;
    hold.event = e0.get();
    hold.fn = &hold_completions;
    hold.user = &g;
    expect(lib.api().event_on_complete(&hold) == CLOPS_OK, "event_on_complete");
    g.entered.get_future().wait(); // the completer is in the callback now
    std::vector<gemm_job> started;
    for (int64_t i = 0; i < 3; i++)
        started.emplace_back(9 + i, 8, 7);
    std::vector<clops::event> started_events;
    for (gemm_job &j : started)
        started_events.push_back(j.submit(s));
    gemm_job victim(11, 10, 9);
    clops::event e = victim.submit(s);
    std::future<void> f = e.future();
    expect(!e.wait(std::chrono::milliseconds(20)), "a queued call's wait times out");
    expect(e.state() == clops::event_state::queued, "the fourth call behind a held stream waits");
    e.cancel();
    g.open.set_value();
    expect_error([&] { f.get(); }, CLOPS_ERR_CANCELLED, "cancelled",
                 "a cancelled call's future returns", "future: CLOPS_ERR_CANCELLED");
    expect_error([&] { e.result(); }, CLOPS_ERR_CANCELLED, "cancelled",
                 "a cancelled call's result() returns", "result(): CLOPS_ERR_CANCELLED");
    try {
        e.result();
    } catch (const clops::error &err) {
        expect(err.status_name() == "CLOPS_ERR_CANCELLED", "the status is named");
        std::printf("  cancelled call -> %s\n", err.what());
    }
    expect(e.state() == clops::event_state::cancelled, "the event is cancelled");
    expect(victim.untouched(), "a cancelled call leaves its host output untouched");
    e.cancel(); // has its outcome: keeps it, no error
    double worst = 0;
    for (std::size_t i = 0; i < started.size(); i++) {
        started_events[i].result();
        worst = std::fmax(worst, started[i].error());
    }
    e0.result();
    worst = std::fmax(worst, first.error());
    expect(worst < 2, "the calls around the cancelled one complete");
    pass("cancelled_call_throws", worst);
}

// An event outlives its stream: with the stream released, the event still waits, reports its
// outcome, and a future taken afterwards is still fulfilled on a clops thread.
void test_event_outlives_stream(const clops::pool &pool)
{
    gemm_job job(27, 21, 33);
    clops::event e;
    {
        clops::stream s = pool.create_stream();
        e = job.submit(s);
        clops::stream moved = std::move(s);
        expect(!s && moved, "a moved-from stream is empty");
    }
    e.wait();
    expect(e.ready() && e.status() == CLOPS_OK && e.message().empty(),
           "the event of a released stream has its outcome");
    e.future().get();
    expect_error([&] { e.future(); }, CLOPS_ERR_INVALID_ARGUMENT, "one per event",
                 "a second future() of one event returns", "second future: INVALID_ARGUMENT");
    clops::event moved = std::move(e);
    expect(!e && moved, "a moved-from event is empty");
    expect_error([&] { e.result(); }, CLOPS_ERR_INVALID_ARGUMENT, "empty",
                 "result() of a moved-from event returns", "moved-from event: INVALID_ARGUMENT");
    double error = job.error();
    expect(error < 2, "the call of a released stream computed its result");
    pass("event_outlives_stream", error);
}

// A submitted call its checks refuse throws at once, naming the parameter, and queues nothing.
void test_refused_submit_throws_at_once(const clops::pool &pool)
{
    clops::stream s = pool.create_stream();
    std::vector<double> a(20, 1.0), b(18, 1.0), c(30, 7.0);
    expect_error(
        [&] { (void)s.gemm(clops::view(a, 5, 4), clops::view(b, 3, 6), clops::view(c, 5, 6)); },
        CLOPS_ERR_INVALID_ARGUMENT, "'b'", "a refused submit returns",
        "refused submit: INVALID_ARGUMENT naming b");
    expect(c == std::vector<double>(30, 7.0), "a refused submit changes nothing");
    std::printf("refused_submit_throws_at_once: PASS\n");
}

// ---- Registered host memory (ABI 1.4) -----------------------------------------------------------

// C = 1.5 A B - 0.25 C with A, B and C each in a registered vector (uploads straight from them
// where the device stages host operands): within the loop reference's bound, and the same bits
// as the call on unregistered copies.
template <class T>
double registered_gemm_error(const clops::pool &pool, int64_t m, int64_t n, int64_t k,
                             clops::layout l)
{
    auto a = random_vector<T>(idx(m * k)), b = random_vector<T>(idx(k * n));
    auto c = random_vector<T>(idx(m * n));
    auto a_copy = a, b_copy = b, c_copy = c;
    const auto c0 = c;
    {
        clops::host_registration ra = pool.register_host(a), rb = pool.register_host(b);
        clops::host_registration rc = pool.register_host(c);
        expect(ra && ra.data() == a.data() && ra.bytes() == a.size() * sizeof(T),
               "a registration names the vector's elements");
        pool.gemm(clops::view(a, m, k, l), clops::view(b, k, n, l), clops::view(c, m, n, l), 1.5,
                  -0.25);
    }
    pool.gemm(clops::view(a_copy, m, k, l), clops::view(b_copy, k, n, l),
              clops::view(c_copy, m, n, l), 1.5, -0.25);
    expect(c == c_copy, "gemm on registered vectors gives the bits of the staged call");
    const bool row = l == clops::layout::row_major;
    return gemm_error(a, row ? k : 1, row ? 1 : m, b, row ? n : 1, row ? 1 : k, c0, c, row ? n : 1,
                      row ? 1 : m, m, n, k, 1.5, -0.25);
}

void test_gemm_on_registered_vectors_matches_loop(const clops::pool &pool)
{
    double error = registered_gemm_error<double>(pool, 37, 23, 51, clops::layout::row_major);
    expect(error < 2, "f64 gemm on registered vectors matches the loop reference");
    pass("gemm_on_registered_vectors_f64", error);
    error = registered_gemm_error<float>(pool, 29, 41, 17, clops::layout::column_major);
    expect(error < 2, "f32 column-major gemm on registered vectors matches the loop reference");
    pass("gemm_on_registered_vectors_f32", error);
}

// A submitted gemm reading registered vectors whose registrations are destroyed before its future
// is waited: the call still gives the reference (the plugin keeps the ranges page-locked until it
// completes), and the ranges, no longer registered, register anew.
void test_submitted_call_outlives_its_registration(const clops::pool &pool)
{
    clops::stream s = pool.create_stream();
    gemm_job job(161, 143, 197);
    std::future<void> done;
    bool running = false;
    {
        clops::host_registration ra = pool.register_host(job.a), rb = pool.register_host(job.b);
        clops::event e = job.submit(s);
        done = e.future();
        running = !e.ready();
    } // unregistered here, the event released: the call goes on
    done.get();
    double error = job.error();
    expect(error < 2, "a call outliving its operands' registration matches the loop reference");
    clops::host_registration again = pool.register_host(job.a);
    again.unregister();
    expect(!again, "an unregistered registration is empty");
    std::printf("submitted_call_outlives_its_registration: PASS, scaled error %.3e (%s when "
                "unregistered)\n",
                error, running ? "running" : "already complete");
}

// Ownership: ranges of one pool may not overlap (the library's message); a moved-from
// registration unregisters nothing (the range stays registered and its new owner unregisters it
// once); move assignment unregisters what it replaces; release() leaves the range registered;
// a registration keeps its pool alive.
void test_host_registration_ownership(const clops::library &lib)
{
    clops::pool pool = lib.create_pool();
    std::vector<double> range(1001, 0.0);
    double *const middle = range.data() + 101;
    const std::size_t middle_bytes = 399 * sizeof(double);
    const auto overlapping = [&] { (void)pool.register_host(range.data() + 450, 60 * 8); };
    clops::host_registration owner;
    {
        clops::host_registration moved_from = pool.register_host(middle, middle_bytes);
        expect_error(overlapping, CLOPS_ERR_INVALID_ARGUMENT, "overlaps",
                     "an overlapping registration returns", "overlap: INVALID_ARGUMENT");
        expect_error([&] { (void)pool.register_host(range); }, CLOPS_ERR_INVALID_ARGUMENT,
                     "overlaps", "a registration around another returns",
                     "enclosing: INVALID_ARGUMENT");
        owner = std::move(moved_from);
        expect(!moved_from && moved_from.data() == nullptr && owner.data() == middle &&
                   owner.bytes() == middle_bytes,
               "a move takes the registration");
    } // the moved-from destructor: nothing to unregister
    expect_error(overlapping, CLOPS_ERR_INVALID_ARGUMENT, "overlaps",
                 "a range is still registered after its moved-from object is gone",
                 "moved-from destructor unregistered nothing");
    clops::host_registration beside = pool.register_host(middle + 399, 8); // adjacent: no overlap
    owner.unregister(); // throws CLOPS_ERR_NOT_FOUND had the moved-from object unregistered it
    expect_error([&] { owner.unregister(); }, CLOPS_ERR_INVALID_ARGUMENT, "empty",
                 "unregister() of an empty registration returns", "empty: INVALID_ARGUMENT");
    beside = pool.register_host(range.data(), 8); // unregisters [middle + 399, +8)
    // Overlaps what `beside` held: registers only because the move assignment unregistered it.
    clops::host_registration tail = pool.register_host(middle + 300, 200 * 8);
    expect_error([&] { (void)pool.register_host(range.data(), 0); }, CLOPS_ERR_INVALID_ARGUMENT,
                 "'bytes' = 0", "an empty range registers", "bytes 0: INVALID_ARGUMENT");

    tail.reset();
    beside.reset();
    clops::host_registration whole = pool.register_host(range);
    void *kept = whole.release();
    expect(!whole && kept == range.data(), "release() empties the object and returns the range");
    expect_error(overlapping, CLOPS_ERR_INVALID_ARGUMENT, "overlaps",
                 "a released range is still registered", "release() unregistered nothing");
    clops_host_register_args u{};
    u.struct_size = sizeof u;
    u.pool = pool.get();
    u.data = kept;
    expect(lib.api().host_unregister(&u) == CLOPS_OK, "host_unregister of a released range");

    clops::host_registration outlives = pool.register_host(range);
    pool.reset(); // the registration holds the pool
    outlives.unregister();
    std::printf("host_registration_ownership: PASS\n");
}

// ---- Interop (ABI 1.4): the test's own OpenCL objects --------------------------------------

void expect_cl(cl_int err, const std::string &what)
{
    expect(err == CL_SUCCESS, what + ": OpenCL error " + std::to_string(err));
}

// An OpenCL context and in-order queue on the first GPU, else the first device of any type: made
// here with the OpenCL API, as a host that owns them would, and released by it.
struct host_opencl {
    cl_device_id device = nullptr;
    cl_context context = nullptr;
    cl_command_queue queue = nullptr;

    host_opencl()
    {
        cl_platform_id platforms[16];
        cl_uint count = 0;
        expect_cl(clGetPlatformIDs(16, platforms, &count), "clGetPlatformIDs");
        for (cl_device_type type :
             {cl_device_type(CL_DEVICE_TYPE_GPU), cl_device_type(CL_DEVICE_TYPE_ALL)})
            for (cl_uint p = 0; p < count && device == nullptr; p++)
                if (clGetDeviceIDs(platforms[p], type, 1, &device, nullptr) != CL_SUCCESS)
                    device = nullptr;
        expect(device != nullptr, "an OpenCL device");
        cl_int err = CL_SUCCESS;
        context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
        expect_cl(err, "clCreateContext");
        queue = clCreateCommandQueue(context, device, 0, &err);
        expect_cl(err, "clCreateCommandQueue");
    }
    host_opencl(const host_opencl &) = delete;
    host_opencl &operator=(const host_opencl &) = delete;
    ~host_opencl()
    {
        clReleaseCommandQueue(queue);
        clReleaseContext(context);
    }

    // A buffer of the context holding `v`.
    template <class T> cl_mem buffer(const std::vector<T> &v) const
    {
        cl_int err = CL_SUCCESS;
        cl_mem mem =
            clCreateBuffer(context, CL_MEM_READ_WRITE, v.size() * sizeof(T), nullptr, &err);
        expect_cl(err, "clCreateBuffer");
        expect_cl(clEnqueueWriteBuffer(queue, mem, CL_TRUE, 0, v.size() * sizeof(T), v.data(), 0,
                                       nullptr, nullptr),
                  "clEnqueueWriteBuffer");
        return mem;
    }
    template <class T> void read(cl_mem mem, std::vector<T> &v) const
    {
        expect_cl(clEnqueueReadBuffer(queue, mem, CL_TRUE, 0, v.size() * sizeof(T), v.data(), 0,
                                      nullptr, nullptr),
                  "clEnqueueReadBuffer");
    }
};

cl_uint reference_count(cl_mem mem)
{
    cl_uint count = 0;
    expect_cl(clGetMemObjectInfo(mem, CL_MEM_REFERENCE_COUNT, sizeof count, &count, nullptr),
              "clGetMemObjectInfo");
    return count;
}

// The count once it has come down to `want`, or after 5 s: the driver may drop the references
// its finished commands' events hold a moment after they complete, on its own thread (PoCL
// does). A reference clops kept stays and fails the check.
cl_uint settled_reference_count(cl_mem mem, cl_uint want)
{
    cl_uint count = reference_count(mem);
    for (int i = 0; i < 500 && count != want; i++) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        count = reference_count(mem);
    }
    return count;
}

// A pool on the host's context, device and queue; C = alpha A B + beta C on the host's cl_mem
// objects, wrapped without a copy, read back with the host's queue. The wrapped buffers name
// the host's cl_mem and context, hold a reference while they live and give it back after:
// the memory stays the host's, still readable once clops let go of it.
void test_gemm_on_wrapped_host_memory(const host_opencl &cl)
{
    const int64_t m = 23, n = 19, k = 37;
    auto a = random_vector<double>(idx(m * k)), b = random_vector<double>(idx(k * n));
    auto c = random_vector<double>(idx(m * n));
    const auto c0 = c;
    cl_mem a_mem = cl.buffer(a), b_mem = cl.buffer(b), c_mem = cl.buffer(c);
    clops::pool pool = clops::pool::from_cl(cl.context, {cl.device}, {cl.queue});
    expect(pool.device_count() == 1, "a pool on one host device has one device");
    {
        clops::buffer da = pool.wrap(a_mem), db = pool.wrap(b_mem), dc = pool.wrap(c_mem);
        expect(dc.cl_mem() == static_cast<void *>(c_mem) &&
                   dc.cl_context() == static_cast<void *>(cl.context) && dc.device() == 0,
               "a wrapped buffer names the host's cl_mem, context and device");
        expect(dc.size() == m * n * 8, "a wrapped buffer's size is its cl_mem's");
        expect(reference_count(c_mem) > 1, "a wrapped cl_mem is retained while it is used");
        pool.gemm(da.matrix<double>(m, k), db.matrix<double>(k, n), dc.matrix<double>(m, n), 0.5,
                  -2.0);
    }
    expect(settled_reference_count(c_mem, 1) == 1,
           "a released wrapped buffer gives its reference back");
    cl.read(c_mem, c); // never freed by clops: still the host's
    double error = gemm_error(a, k, 1, b, n, 1, c0, c, n, 1, m, n, k, 0.5, -2.0);
    expect(error < 2, "gemm on wrapped cl_mem matches the loop reference");
    for (cl_mem mem : {a_mem, b_mem, c_mem})
        clReleaseMemObject(mem);
    expect_error(
        [&] {
            (void)clops::pool::from_cl(cl.context, {cl.device}, {cl.queue, cl.queue});
        },
        CLOPS_ERR_INVALID_ARGUMENT, "2 queues for 1 devices",
        "from_cl with two queues for one device returns", "from_cl: INVALID_ARGUMENT");
    pass("gemm_on_wrapped_host_memory", error);
}

// memory_stats: a clops buffer of an awkward size adds its bytes and one buffer, and its release
// takes them back; a wrapped cl_mem counts nothing; peak and limit bound what is allocated.
void test_memory_stats_count_buffer_bytes(const host_opencl &cl)
{
    clops::pool pool = clops::pool::from_cl(cl.context, {cl.device});
    const clops::device_memory before = pool.memory_stats(0);
    expect(before.limit_bytes > 0 && before.peak_bytes >= before.allocated_bytes,
           "a limit, and a peak at least what is allocated");
    const int64_t bytes = 8 * 12345 + 40;
    std::vector<double> host(idx(bytes / 8), 1.0);
    cl_mem mem = cl.buffer(host);
    clops::buffer wrapped = pool.wrap(mem);
    clops::device_memory now = pool.memory_stats(0);
    expect(now.allocated_bytes == before.allocated_bytes && now.buffers == before.buffers,
           "a wrapped cl_mem is not counted");
    clops::buffer own = pool.create_buffer(bytes);
    now = pool.memory_stats(0);
    expect(
        now.allocated_bytes - before.allocated_bytes == bytes,
        "a buffer adds its bytes: " + std::to_string(now.allocated_bytes - before.allocated_bytes) +
            " for " + std::to_string(bytes));
    expect(now.buffers == before.buffers + 1, "a buffer adds one buffer");
    expect(now.peak_bytes >= now.allocated_bytes && now.allocated_bytes <= now.limit_bytes,
           "the peak bounds what is allocated, and the limit too");
    own.reset();
    wrapped.reset();
    now = pool.memory_stats(0);
    expect(now.allocated_bytes == before.allocated_bytes && now.buffers == before.buffers,
           "a released buffer gives its bytes back");
    expect_error([&] { (void)pool.memory_stats(1); }, CLOPS_ERR_NOT_FOUND, "'device' = 1",
                 "memory_stats of a device the pool lacks returns",
                 "memory_stats(1): NOT_FOUND naming device");
    clReleaseMemObject(mem);
    std::printf("memory_stats_count_buffer_bytes: PASS (%lld bytes, limit %lld)\n",
                static_cast<long long>(bytes), static_cast<long long>(now.limit_bytes));
}

} // namespace

int main()
{
    // PoCL then shows two CPU devices, for buffers on device 1 (a value the user set is kept).
#ifndef _WIN32 // under Wine, PoCL reads the Unix environment: ctest sets it there
    setenv("POCL_DEVICES", "pthread pthread", 0);
#endif
    try {
        clops::library lib;
        std::printf("libclops %s, ABI %d.%d\n", lib.version().c_str(),
                    static_cast<int>(lib.api().abi_major), static_cast<int>(lib.api().abi_minor));
        clops::pool pool = lib.create_pool();
        test_gemm_row_major_matches_loop(pool);
        test_gemm_column_major_transposed_f32(pool);
        test_gemm_trans_flags_and_leading_dimension(pool);
        test_lu_then_lu_solve_residual(pool);
        test_solve_residual(pool);
        test_bad_arguments_throw_status_and_message(pool);
        test_sized_arrays(lib);
        test_invoke_by_name(pool);
        test_device_buffers(lib);
        test_buffers_on_a_device(lib);
        test_move_semantics();
        test_library_rule_clops_library_alone();
        test_gemms_on_two_streams_match_loop(pool);
        test_streams_ordered_by_events(pool);
        test_cancelled_call_throws(lib, pool);
        test_event_outlives_stream(pool);
        test_refused_submit_throws_at_once(pool);
        test_gemm_on_registered_vectors_matches_loop(pool);
        test_submitted_call_outlives_its_registration(pool);
        test_host_registration_ownership(lib);
        host_opencl cl;
        test_gemm_on_wrapped_host_memory(cl);
        test_memory_stats_count_buffer_bytes(cl);
    } catch (const clops::error &e) {
        std::printf("FAIL: unexpected clops::error: %s\n", e.what());
        return 1;
    }
    std::printf("All C++ tests PASS\n");
    return 0;
}
