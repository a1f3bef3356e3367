// clops.hpp — a header-only C++17 binding of libclops: RAII library, pool and buffer (move-only),
// clops::error exceptions, tensor views over host memory or device buffers, typed gemm / lu /
// solve / lu_solve, and a generic invoke by parameter name. Needs only abi/clops.h and -ldl.
//
//     clops::library lib;                     // $CLOPS_LIBRARY, else CLOPS_PLUGIN_PATH
//     clops::pool pool = lib.create_pool();   // first GPU, else the CPU
//     pool.gemm(clops::view(a, m, k), clops::view(b, k, n), clops::view(c, m, n));
//
// CLOPS_PLUGIN_PATH, when the build defines it (find_package(clops)'s clops::headers does, and
// pkg-config's `plugin` variable holds it), is the installed plugin's path; else libclops.so.1
// is looked up on the system's library path.
//
// Lifetimes: a pool keeps its library loaded, and a buffer keeps its pool alive (the ABI wants a
// buffer released before its pool), so the objects may be destroyed in any order.
#ifndef CLOPS_HPP
#define CLOPS_HPP

#include <dlfcn.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

// clops.h's C initializer `= {0}` (in clops_matrix) is -Wmissing-field-initializers to a C++
// compiler with -Wextra: keep that from every program that includes this header.
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif
#include "clops.h"
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

namespace clops
{

// ---- Errors ---------------------------------------------------------------------------------

// A failed call: the clops_status and the message (which names the parameter, its value and
// what was expected). what() reads "CLOPS_ERR_...: message".
class error : public std::runtime_error
{
  public:
    error(int32_t status, const std::string &status_name, const std::string &message)
        : std::runtime_error(status_name + ": " + message), status_(status),
          status_name_(status_name), message_(message)
    {
    }
    int32_t status() const noexcept
    {
        return status_;
    }
    const std::string &status_name() const noexcept
    {
        return status_name_;
    }
    const std::string &message() const noexcept
    {
        return message_;
    }

  private:
    int32_t status_;
    std::string status_name_;
    std::string message_;
};

namespace detail
{

inline const char *status_name_fallback(int32_t status)
{
    switch (status) {
    case CLOPS_OK: return "CLOPS_OK";
    case CLOPS_ERR_INVALID_ARGUMENT: return "CLOPS_ERR_INVALID_ARGUMENT";
    case CLOPS_ERR_NOT_FOUND: return "CLOPS_ERR_NOT_FOUND";
    case CLOPS_ERR_ABI_MISMATCH: return "CLOPS_ERR_ABI_MISMATCH";
    default: return "CLOPS_ERR_INTERNAL";
    }
}

// An error found by this binding before the plugin was reached.
[[noreturn]] inline void fail(int32_t status, const std::string &message)
{
    throw error(status, status_name_fallback(status), message);
}

// The loaded plugin: shared by the library object and every pool made from it, so that it is
// unloaded only after the last of them.
struct plugin {
    void *handle = nullptr;
    const clops_api *api = nullptr;

    plugin() = default;
    plugin(const plugin &) = delete;
    plugin &operator=(const plugin &) = delete;
    ~plugin()
    {
        if (handle != nullptr)
            dlclose(handle);
    }

    // Turns a status into an exception carrying the calling thread's message.
    void check(int32_t status) const
    {
        if (status != CLOPS_OK)
            throw error(status, api->status_name(status), api->last_error());
    }
};

// The pool's handle, shared by the pool object and its buffers.
struct pool_state {
    std::shared_ptr<const plugin> lib;
    clops_pool *handle = nullptr;

    pool_state(std::shared_ptr<const plugin> l, clops_pool *h) : lib(std::move(l)), handle(h) {}
    pool_state(const pool_state &) = delete;
    pool_state &operator=(const pool_state &) = delete;
    ~pool_state()
    {
        lib->api->pool_release(handle);
    }
};

template <class T> struct dtype_of;
template <> struct dtype_of<float> : std::integral_constant<int32_t, CLOPS_F32> {
};
template <> struct dtype_of<double> : std::integral_constant<int32_t, CLOPS_F64> {
};
template <> struct dtype_of<int32_t> : std::integral_constant<int32_t, CLOPS_I32> {
};
template <> struct dtype_of<uint32_t> : std::integral_constant<int32_t, CLOPS_U32> {
};
template <> struct dtype_of<uint8_t> : std::integral_constant<int32_t, CLOPS_U8> {
};
template <> struct dtype_of<int64_t> : std::integral_constant<int32_t, CLOPS_I64> {
};

} // namespace detail

// The clops dtype of an element type: clops::dtype_v<double> == CLOPS_F64.
template <class T> constexpr int32_t dtype_v = detail::dtype_of<std::remove_cv_t<T>>::value;

enum class layout { row_major, column_major };
enum class trans : int32_t { none = CLOPS_NO_TRANS, transpose = CLOPS_TRANS };
enum class pivoting : int32_t { partial = 0, none = 1 };

// ---- Tensor views ---------------------------------------------------------------------------

// A non-owning view: pointer (or device buffer) + dtype + shape + strides in elements, exactly a
// struct clops_tensor. The memory must outlive every call the view is passed to. A view made
// from const data is read-only: passing it where clops writes throws.
class tensor_view
{
  public:
    tensor_view() = default;

    // A host view of any rank (up to CLOPS_MAX_RANK); strides default to row-major.
    tensor_view(void *data, int32_t dtype, std::initializer_list<int64_t> shape,
                std::initializer_list<int64_t> strides = {}, bool read_only = false)
        : read_only_(read_only)
    {
        if (shape.size() > CLOPS_MAX_RANK ||
            (strides.size() != 0 && strides.size() != shape.size()))
            detail::fail(CLOPS_ERR_INVALID_ARGUMENT,
                         "tensor_view: rank above CLOPS_MAX_RANK, or strides of another rank");
        t_.data = data;
        t_.dtype = dtype;
        t_.rank = static_cast<int32_t>(shape.size());
        int32_t i = 0;
        for (int64_t extent : shape)
            t_.shape[i++] = extent;
        if (strides.size() != 0) {
            i = 0;
            for (int64_t stride : strides)
                t_.strides[i++] = stride;
        } else {
            int64_t dense = 1;
            for (i = t_.rank - 1; i >= 0; i--) {
                t_.strides[i] = dense;
                dense *= t_.shape[i] > 0 ? t_.shape[i] : 1;
            }
        }
    }

    // An existing descriptor, e.g. one built with clops_matrix_on_device().
    explicit tensor_view(const clops_tensor &t, bool read_only = false)
        : t_(t), read_only_(read_only)
    {
    }

    const clops_tensor *get() const noexcept
    {
        return &t_;
    }
    const clops_tensor &raw() const noexcept
    {
        return t_;
    }
    int32_t dtype() const noexcept
    {
        return t_.dtype;
    }
    int32_t rank() const noexcept
    {
        return t_.rank;
    }
    int64_t shape(int32_t axis) const noexcept
    {
        return t_.shape[axis];
    }
    int64_t stride(int32_t axis) const noexcept
    {
        return t_.strides[axis];
    }
    bool read_only() const noexcept
    {
        return read_only_;
    }

    // The transposed view of a matrix: shape and strides swapped, no copy.
    tensor_view t() const
    {
        if (t_.rank != 2)
            detail::fail(CLOPS_ERR_INVALID_ARGUMENT, "tensor_view::t: the view is not a matrix");
        tensor_view v = *this;
        std::swap(v.t_.shape[0], v.t_.shape[1]);
        std::swap(v.t_.strides[0], v.t_.strides[1]);
        return v;
    }

  private:
    clops_tensor t_{};
    bool read_only_ = false;
};

// A rows×cols matrix at `data`; ld = the leading dimension (0: dense, cols for row-major,
// rows for column-major).
template <class T>
tensor_view view(T *data, int64_t rows, int64_t cols, layout l = layout::row_major, int64_t ld = 0)
{
    if (ld == 0)
        ld = l == layout::row_major ? cols : rows;
    clops_tensor t = clops_matrix(const_cast<std::remove_cv_t<T> *>(data), dtype_v<T>, rows, cols,
                                  ld, l == layout::column_major ? 1 : 0);
    return tensor_view(t, std::is_const<T>::value);
}

namespace detail
{
inline void check_fits(std::size_t size, int64_t rows, int64_t cols, int64_t ld, layout l)
{
    if (rows < 0 || cols < 0)
        fail(CLOPS_ERR_INVALID_ARGUMENT,
             "view: negative extent " + std::to_string(rows) + "x" + std::to_string(cols));
    if (rows == 0 || cols == 0)
        return;
    int64_t outer = l == layout::row_major ? rows : cols;
    int64_t inner = l == layout::row_major ? cols : rows;
    if (ld == 0)
        ld = inner;
    if (ld < inner || static_cast<uint64_t>((outer - 1) * ld + inner) > size)
        fail(CLOPS_ERR_INVALID_ARGUMENT, "view: a " + std::to_string(rows) + "x" +
                                             std::to_string(cols) + " matrix with ld " +
                                             std::to_string(ld) + " does not fit a vector of " +
                                             std::to_string(size) + " elements");
}
} // namespace detail

// A rows×cols matrix over a vector, checked to fit in it.
template <class T>
tensor_view view(std::vector<T> &v, int64_t rows, int64_t cols, layout l = layout::row_major,
                 int64_t ld = 0)
{
    detail::check_fits(v.size(), rows, cols, ld, l);
    return view(v.data(), rows, cols, l, ld);
}

template <class T>
tensor_view view(const std::vector<T> &v, int64_t rows, int64_t cols, layout l = layout::row_major,
                 int64_t ld = 0)
{
    detail::check_fits(v.size(), rows, cols, ld, l);
    return view(v.data(), rows, cols, l, ld);
}

// A vector as a rank-1 tensor (pivots, info, reductions).
template <class T> tensor_view view(std::vector<T> &v)
{
    return tensor_view(v.data(), dtype_v<T>, {static_cast<int64_t>(v.size())});
}

template <class T> tensor_view view(const std::vector<T> &v)
{
    return tensor_view(const_cast<T *>(v.data()), dtype_v<T>, {static_cast<int64_t>(v.size())}, {},
                       true);
}

// ---- Generic invoke arguments ---------------------------------------------------------------

// One named argument of pool::invoke: a tensor, a number, or a string (an enum value or a
// string parameter). Numbers and strings are converted to the parameter's kind, read from the
// operator's descriptor: {"alpha", 2} passes 2.0, {"trans_a", "transpose"} an enum value.
class arg
{
  public:
    arg(std::string name, const tensor_view &t)
        : name_(std::move(name)), tensor_(t), what_(what::tensor)
    {
    }
    template <class F, std::enable_if_t<std::is_floating_point<F>::value, int> = 0>
    arg(std::string name, F d)
        : name_(std::move(name)), number_(static_cast<double>(d)), what_(what::real)
    {
    }
    template <class I, std::enable_if_t<std::is_integral<I>::value, int> = 0>
    arg(std::string name, I v)
        : name_(std::move(name)), number_(static_cast<double>(v)),
          integer_(static_cast<int64_t>(v)), what_(what::integer)
    {
    }
    arg(std::string name, const char *s) : name_(std::move(name)), text_(s), what_(what::text) {}
    arg(std::string name, std::string s)
        : name_(std::move(name)), text_(std::move(s)), what_(what::text)
    {
    }

    const std::string &name() const noexcept
    {
        return name_;
    }

    // The C argument for parameter `p` of the operator (nullptr when it has no such parameter:
    // the plugin then reports the unknown name).
    clops_arg to_c(const clops_param *p) const
    {
        clops_arg a{};
        a.name = name_.c_str();
        int32_t kind = p != nullptr ? p->kind : 0;
        if (what_ == what::tensor) {
            if (tensor_.read_only() && p != nullptr && kind != CLOPS_PARAM_TENSOR_IN)
                detail::fail(CLOPS_ERR_INVALID_ARGUMENT,
                             "invoke: parameter '" + name_ +
                                 "' is written, but its view is read-only");
            a.kind = CLOPS_PARAM_TENSOR_INOUT; // the three tensor kinds are one to invoke()
            a.tensor = tensor_.get();
            return a;
        }
        if (kind == CLOPS_PARAM_DOUBLE && what_ != what::text) {
            a.kind = kind;
            a.d = number_;
        } else if (kind == CLOPS_PARAM_ENUM && what_ != what::real) {
            a.kind = kind;
            a.i = integer_; // by index when no string is given
            if (what_ == what::text)
                a.s = text_.c_str();
        } else {
            // The value as what it is: INT64 and STRING parameters take it, any other kind gets
            // the plugin's message naming the parameter and both kinds.
            a.kind = what_ == what::text      ? CLOPS_PARAM_STRING
                     : what_ == what::integer ? CLOPS_PARAM_INT64
                                              : CLOPS_PARAM_DOUBLE;
            a.i = integer_;
            a.d = number_;
            if (what_ == what::text)
                a.s = text_.c_str();
        }
        return a;
    }

  private:
    enum class what { tensor, real, integer, text };
    std::string name_;
    tensor_view tensor_{};
    double number_ = 0;
    int64_t integer_ = 0;
    std::string text_;
    what what_;
};

class pool;

// ---- Device buffers -------------------------------------------------------------------------

// Device memory on a pool's primary device; keeps the pool alive. Move-only.
class buffer
{
  public:
    buffer() = default;
    buffer(buffer &&other) noexcept
        : pool_(std::move(other.pool_)), handle_(std::exchange(other.handle_, nullptr))
    {
    }
    buffer &operator=(buffer &&other) noexcept
    {
        if (this != &other) {
            reset();
            pool_ = std::move(other.pool_);
            handle_ = std::exchange(other.handle_, nullptr);
        }
        return *this;
    }
    buffer(const buffer &) = delete;
    buffer &operator=(const buffer &) = delete;
    ~buffer()
    {
        reset();
    }

    explicit operator bool() const noexcept
    {
        return handle_ != nullptr;
    }
    clops_buffer *get() const noexcept
    {
        return handle_;
    }
    int64_t size() const
    {
        return api().buffer_size(checked());
    }

    template <class T> void upload(const std::vector<T> &src, int64_t offset_bytes = 0)
    {
        pool_->lib->check(api().buffer_upload(checked(), offset_bytes, src.data(),
                                              static_cast<int64_t>(src.size() * sizeof(T))));
    }
    template <class T> void download(std::vector<T> &dst, int64_t offset_bytes = 0) const
    {
        pool_->lib->check(api().buffer_download(checked(), offset_bytes, dst.data(),
                                                static_cast<int64_t>(dst.size() * sizeof(T))));
    }

    // A rows×cols matrix of T in this buffer, starting `offset` elements in.
    template <class T>
    tensor_view matrix(int64_t rows, int64_t cols, layout l = layout::row_major, int64_t ld = 0,
                       int64_t offset = 0) const
    {
        if (ld == 0)
            ld = l == layout::row_major ? cols : rows;
        clops_tensor t = clops_matrix_on_device(checked(), dtype_v<T>, rows, cols, ld,
                                                l == layout::column_major ? 1 : 0);
        t.offset = offset;
        return tensor_view(t);
    }

    void reset() noexcept
    {
        if (handle_ != nullptr)
            pool_->lib->api->buffer_release(handle_);
        handle_ = nullptr;
        pool_.reset();
    }

  private:
    friend class pool;
    buffer(std::shared_ptr<detail::pool_state> p, clops_buffer *h) : pool_(std::move(p)), handle_(h)
    {
    }
    const clops_api &api() const
    {
        return *pool_->lib->api;
    }
    clops_buffer *checked() const
    {
        if (handle_ == nullptr)
            detail::fail(CLOPS_ERR_INVALID_ARGUMENT, "buffer: the buffer is empty (moved from)");
        return handle_;
    }

    std::shared_ptr<detail::pool_state> pool_;
    clops_buffer *handle_ = nullptr;
};

// ---- Pools ----------------------------------------------------------------------------------

// Devices, queues and compiled kernels; shared by threads (every call is synchronous). Move-only:
// a moved-from pool is empty (false), and its calls throw.
class pool
{
  public:
    pool() = default;
    pool(pool &&other) noexcept = default;
    pool &operator=(pool &&other) noexcept = default;
    pool(const pool &) = delete;
    pool &operator=(const pool &) = delete;
    ~pool() = default;

    explicit operator bool() const noexcept
    {
        return state_ != nullptr;
    }
    bool empty() const noexcept
    {
        return state_ == nullptr;
    }
    clops_pool *get() const noexcept
    {
        return state_ ? state_->handle : nullptr;
    }
    // Releases the pool now (once its buffers are gone too); an empty pool stays empty.
    void reset() noexcept
    {
        state_.reset();
    }

    int32_t device_count() const
    {
        return api().pool_device_count(checked());
    }
    clops_device_info device_info(int32_t index) const
    {
        clops_device_info info{};
        info.struct_size = sizeof info;
        lib().check(api().pool_device_info(checked(), index, &info));
        return info;
    }
    clops_stats stats() const
    {
        clops_stats s{};
        s.struct_size = sizeof s;
        lib().check(api().pool_stats(checked(), &s));
        return s;
    }

    buffer create_buffer(int64_t bytes) const
    {
        clops_buffer *b = nullptr;
        lib().check(api().buffer_create(checked(), bytes, &b));
        return buffer(state_, b);
    }

    // C = alpha op(A) op(B) + beta C (f32 or f64; beta = 0 never reads C).
    void gemm(const tensor_view &a, const tensor_view &b, const tensor_view &c, double alpha = 1,
              double beta = 0, trans trans_a = trans::none, trans trans_b = trans::none) const
    {
        writable(c, "gemm", "c");
        auto fn = reinterpret_cast<clops_gemm_fn>(entry("gemm"));
        lib().check(fn(checked(), a.get(), b.get(), c.get(), static_cast<int32_t>(trans_a),
                       static_cast<int32_t>(trans_b), alpha, beta));
    }

    // P A = L U in place (getrf); ipiv (i32, min(M,N)) receives 1-based pivots. Returns info:
    // 0, or k > 0 when U(k,k) is exactly zero.
    int32_t lu(const tensor_view &a, const tensor_view &ipiv, pivoting p = pivoting::partial) const
    {
        writable(a, "lu", "a");
        writable(ipiv, "lu", "ipiv");
        int32_t info = 0;
        tensor_view info_view(&info, CLOPS_I32, {1});
        auto fn = reinterpret_cast<clops_lu_fn>(entry("lu"));
        lib().check(fn(checked(), a.get(), ipiv.get(), info_view.get(), static_cast<int32_t>(p)));
        return info;
    }

    // A X = B (gesv): a becomes its LU factors, b becomes X. Returns info as lu's (b untouched
    // when > 0).
    int32_t solve(const tensor_view &a, const tensor_view &b, const tensor_view &ipiv) const
    {
        writable(a, "solve", "a");
        writable(b, "solve", "b");
        writable(ipiv, "solve", "ipiv");
        int32_t info = 0;
        tensor_view info_view(&info, CLOPS_I32, {1});
        auto fn = reinterpret_cast<clops_solve_fn>(entry("solve"));
        lib().check(fn(checked(), a.get(), b.get(), ipiv.get(), info_view.get()));
        return info;
    }

    // Solves with lu's factors and pivots (getrs); b becomes X.
    void lu_solve(const tensor_view &factors, const tensor_view &ipiv, const tensor_view &b,
                  trans t = trans::none) const
    {
        writable(b, "lu_solve", "b");
        auto fn = reinterpret_cast<clops_lu_solve_fn>(entry("lu_solve"));
        lib().check(fn(checked(), factors.get(), ipiv.get(), b.get(), static_cast<int32_t>(t)));
    }

    // Any operator by name, arguments by parameter name; left-out parameters take their
    // defaults. The plugin validates everything; a rejected call changes nothing.
    void invoke(const std::string &op_name, std::initializer_list<arg> args) const
    {
        invoke(op_name, std::vector<arg>(args));
    }

    void invoke(const std::string &op_name, const std::vector<arg> &args) const
    {
        const clops_op *op = find(op_name);
        std::vector<clops_arg> c_args;
        c_args.reserve(args.size());
        for (const arg &a : args)
            c_args.push_back(a.to_c(param(op, a.name())));
        auto nargs = static_cast<int32_t>(c_args.size());
        // invoke() reads ABI 1.1's clops_arg, which is still ours: a plugin older than 1.2
        // has no invoke_sized and is called with it.
        static_assert(sizeof(clops_arg) == CLOPS_ARG_SIZE_1_1, "invoke() needs a 1.1 clops_arg");
        if (CLOPS_API_HAS(&api(), invoke_sized))
            lib().check(api().invoke_sized(checked(), op, c_args.data(), nargs, sizeof(clops_arg)));
        else
            lib().check(api().invoke(checked(), op, c_args.data(), nargs));
    }

  private:
    friend class library;
    explicit pool(std::shared_ptr<detail::pool_state> s) : state_(std::move(s)) {}

    clops_pool *checked() const
    {
        if (state_ == nullptr)
            detail::fail(CLOPS_ERR_INVALID_ARGUMENT,
                         "pool: the pool is empty (moved from or reset)");
        return state_->handle;
    }
    const detail::plugin &lib() const
    {
        checked();
        return *state_->lib;
    }
    const clops_api &api() const
    {
        return *lib().api;
    }

    const clops_op *find(const std::string &name) const
    {
        const clops_op *op = api().op_find(name.c_str());
        if (op == nullptr)
            lib().check(CLOPS_ERR_NOT_FOUND);
        return op;
    }
    using entry_fn = void (*)(void);
    entry_fn entry(const char *name) const
    {
        return find(name)->entry;
    }

    // Stepping by the plugin's param_size (clops_op_param), not by our sizeof(clops_param).
    static const clops_param *param(const clops_op *op, const std::string &name)
    {
        for (int32_t i = 0; i < op->param_count; i++)
            if (name == clops_op_param(op, i)->name)
                return clops_op_param(op, i);
        return nullptr;
    }

    static void writable(const tensor_view &v, const char *op, const char *name)
    {
        if (v.read_only())
            detail::fail(CLOPS_ERR_INVALID_ARGUMENT, std::string(op) + ": parameter '" + name +
                                                         "' is written, but its view is read-only");
    }

    std::shared_ptr<detail::pool_state> state_;
};

// ---- The library ----------------------------------------------------------------------------

// The loaded plugin. Move-only; pools made from it keep it loaded after it is destroyed.
class library
{
  public:
    // Loads $CLOPS_LIBRARY when set, else CLOPS_PLUGIN_PATH when the build defines it, else
    // libclops.so.1 through the system search path.
    library() : library(default_path()) {}

    explicit library(const std::string &path) : plugin_(std::make_shared<detail::plugin>())
    {
        void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (handle == nullptr) {
            const char *why = dlerror();
            detail::fail(CLOPS_ERR_NOT_FOUND,
                         "cannot load libclops: " + std::string(why ? why : path));
        }
        plugin_->handle = handle;
        // POSIX guarantees that a data pointer from dlsym() converts to a function pointer.
        auto entry = reinterpret_cast<clops_plugin_entry_fn>(dlsym(handle, "clops_plugin_entry"));
        if (entry == nullptr)
            detail::fail(CLOPS_ERR_NOT_FOUND, path + ": no symbol clops_plugin_entry");
        const clops_api *api = entry(CLOPS_ABI_MAJOR);
        if (api == nullptr || api->abi_major != CLOPS_ABI_MAJOR || !CLOPS_API_HAS(api, invoke))
            detail::fail(CLOPS_ERR_ABI_MISMATCH, path + ": the plugin does not serve ABI " +
                                                     std::to_string(CLOPS_ABI_MAJOR) +
                                                     " with every member this binding uses");
        plugin_->api = api;
    }

    library(library &&) noexcept = default;
    library &operator=(library &&) noexcept = default;
    library(const library &) = delete;
    library &operator=(const library &) = delete;
    ~library() = default;

    explicit operator bool() const noexcept
    {
        return plugin_ != nullptr;
    }
    const clops_api &api() const
    {
        return *checked().api;
    }
    std::string version() const
    {
        return api().version();
    }

    // The operator's descriptor (parameters, documentation); throws CLOPS_ERR_NOT_FOUND.
    const clops_op &op(const std::string &name) const
    {
        const clops_op *found = api().op_find(name.c_str());
        if (found == nullptr)
            checked().check(CLOPS_ERR_NOT_FOUND);
        return *found;
    }

    // The built-in defaults: the first GPU, else the CPU device.
    pool create_pool() const
    {
        clops_pool *p = nullptr;
        checked().check(api().pool_create_default(&p));
        return wrap(p);
    }
    // A pool configuration file (configs/clops.cfg documents the format).
    pool create_pool_from_file(const std::string &path) const
    {
        clops_pool *p = nullptr;
        checked().check(api().pool_create_from_file(path.c_str(), &p));
        return wrap(p);
    }
    pool create_pool_from_string(const std::string &config) const
    {
        clops_pool *p = nullptr;
        checked().check(api().pool_create_from_string(config.c_str(), &p));
        return wrap(p);
    }

  private:
    static std::string default_path()
    {
        const char *named = std::getenv("CLOPS_LIBRARY");
#ifdef CLOPS_PLUGIN_PATH
        const char *installed = CLOPS_PLUGIN_PATH;
#else
        const char *installed = "libclops.so.1";
#endif
        return named != nullptr && named[0] != '\0' ? named : installed;
    }
    const detail::plugin &checked() const
    {
        if (plugin_ == nullptr)
            detail::fail(CLOPS_ERR_INVALID_ARGUMENT, "library: the library is empty (moved from)");
        return *plugin_;
    }
    pool wrap(clops_pool *p) const
    {
        // make_shared could throw after the pool exists: release it then rather than leak it.
        try {
            return pool(std::make_shared<detail::pool_state>(plugin_, p));
        } catch (...) {
            plugin_->api->pool_release(p);
            throw;
        }
    }

    std::shared_ptr<detail::plugin> plugin_;
};

} // namespace clops

#endif // CLOPS_HPP
