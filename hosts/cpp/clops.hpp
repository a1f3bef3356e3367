// clops.hpp — a header-only C++17 binding of libclops: RAII library, pool and buffer (move-only),
// clops::error exceptions, tensor views over host memory or device buffers, typed gemm / lu /
// solve / lu_solve, a generic invoke by parameter name, and (ABI 1.4) streams whose calls return at
// once with an event: RAII, waitable with a timeout, cancellable, and a std::future of the
// outcome; interop with the host's OpenCL objects (a pool on its cl_context, buffers over its
// cl_mem, a buffer's cl_mem), the device memory clops holds, and host memory registered with a
// pool (page-locked, RAII). Needs only abi/clops.h and -ldl (on Windows, kernel32: LoadLibraryA;
// OpenCL handles cross as void *: no CL/cl.h).
//
//     clops::library lib;                     // $CLOPS_LIBRARY, else beside, else installed
//     clops::pool pool = lib.create_pool();   // first GPU, else the CPU
//     pool.gemm(clops::view(a, m, k), clops::view(b, k, n), clops::view(c, m, n));
//
//     clops::stream s = pool.create_stream();  // non-blocking calls (ABI 1.4)
//     clops::event e = s.gemm(clops::view(a, m, k), clops::view(b, k, n), clops::view(c, m, n));
//     std::future<void> done = e.future();     // a, b and c stay valid until it is ready
//     done.get();                               // or throws clops::error
//
//     clops::pool mine = clops::pool::from_cl(context, {device}, {queue});  // the host's OpenCL
//     clops::buffer a_dev = mine.wrap(a_mem);   // the host's cl_mem, no copy, never freed by clops
//
//     clops::host_registration r = pool.register_host(a);  // uploads from `a`: one DMA each
//
// clops::library() finds the plugin by the rule every clops host follows (hosts/common/loader.h):
// $CLOPS_LIBRARY, that file alone; else the plugin beside the program (Windows: clops.dll in the
// running .exe's directory) or the one the build names: CLOPS_PLUGIN_PATH, when the build defines
// it (find_package(clops)'s clops::headers does, and pkg-config's `plugin` variable holds it);
// else the installed plugin through the system's search (libclops.so.1 through the dynamic
// loader; clops.dll through the DLL search order, PATH included).
//
// Lifetimes: a pool keeps its library loaded, and a buffer, a stream, an event and a host
// registration keep their pool alive (the ABI wants them released before it), so the objects
// may be destroyed in any order.
#ifndef CLOPS_HPP
#define CLOPS_HPP

#ifdef _WIN32
// windows.h without its min and max macros, which would break std::min and std::max.
#ifndef NOMINMAX
#define NOMINMAX
#define CLOPS_HPP_DEFINED_NOMINMAX
#endif
#include <windows.h>
#ifdef CLOPS_HPP_DEFINED_NOMINMAX
#undef NOMINMAX
#undef CLOPS_HPP_DEFINED_NOMINMAX
#endif
#else
#include <dlfcn.h>
#endif

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <future>
#include <initializer_list>
#include <limits>
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
    case CLOPS_ERR_CANCELLED: return "CLOPS_ERR_CANCELLED";
    case CLOPS_ERR_TIMEOUT: return "CLOPS_ERR_TIMEOUT";
    default: return "CLOPS_ERR_INTERNAL";
    }
}

// An error found by this binding before the plugin was reached.
[[noreturn]] inline void fail(int32_t status, const std::string &message)
{
    throw error(status, status_name_fallback(status), message);
}

// ---- The system's loader (dlopen, or LoadLibraryA on Windows) ----

#ifdef _WIN32
inline constexpr const char *plugin_file_name = "clops.dll";

// Opens `path`; nullptr with the system's reason (naming the file) in `why`.
inline void *open_library(const std::string &path, std::string &why)
{
    HMODULE module = LoadLibraryA(path.c_str());
    if (module == nullptr) {
        DWORD code = GetLastError();
        char text[256];
        DWORD n = FormatMessageA(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS,
                                 nullptr, code, 0, text, sizeof text, nullptr);
        while (n > 0 && (text[n - 1] == '\r' || text[n - 1] == '\n' || text[n - 1] == '.'))
            n--;
        why = path + ": " + (n > 0 ? std::string(text, n) : std::string("LoadLibraryA failed")) +
              " (error " + std::to_string(code) + ")";
    }
    return reinterpret_cast<void *>(module);
}

inline clops_plugin_entry_fn plugin_entry(void *handle)
{
    // GetProcAddress's FARPROC converts to any function pointer type.
    return reinterpret_cast<clops_plugin_entry_fn>(reinterpret_cast<void (*)()>(
        GetProcAddress(reinterpret_cast<HMODULE>(handle), "clops_plugin_entry")));
}

inline void close_library(void *handle)
{
    FreeLibrary(reinterpret_cast<HMODULE>(handle));
}

// clops.dll in the running .exe's directory; "" when that cannot be told.
inline std::string plugin_beside_program()
{
    char exe[4096];
    DWORD n = GetModuleFileNameA(nullptr, exe, sizeof exe);
    if (n == 0 || n >= sizeof exe)
        return "";
    std::string dir(exe, n);
    std::size_t slash = dir.find_last_of("\\/");
    return slash == std::string::npos ? "" : dir.substr(0, slash + 1) + plugin_file_name;
}
#else
inline constexpr const char *plugin_file_name = "libclops.so.1";

inline void *open_library(const std::string &path, std::string &why)
{
    void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
        const char *text = dlerror(); // names the file
        why = text != nullptr ? text : path;
    }
    return handle;
}

inline clops_plugin_entry_fn plugin_entry(void *handle)
{
    // POSIX guarantees that a data pointer from dlsym() converts to a function pointer.
    return reinterpret_cast<clops_plugin_entry_fn>(dlsym(handle, "clops_plugin_entry"));
}

inline void close_library(void *handle)
{
    dlclose(handle);
}

// A binding compiled into the program cannot tell the installed plugin from its own file on
// Linux: CLOPS_PLUGIN_PATH is the plugin the program was built with.
inline std::string plugin_beside_program()
{
    return "";
}
#endif

// Steps 2 and 3 of the rule (hosts/common/loader.h), in order: the plugin beside the program,
// the one the build names, the installed one through the system's search.
inline std::vector<std::string> default_plugin_candidates()
{
    std::vector<std::string> out;
    std::string beside = plugin_beside_program();
    if (!beside.empty())
        out.push_back(beside);
#ifdef CLOPS_PLUGIN_PATH
    out.emplace_back(CLOPS_PLUGIN_PATH);
#endif
    out.emplace_back(plugin_file_name);
    return out;
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
            close_library(handle);
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

namespace detail
{
// Parameter `name` of `op`, stepping by the plugin's param_size (clops_op_param), not by our
// sizeof(clops_param); nullptr when it has none.
inline const clops_param *find_param(const clops_op *op, const std::string &name)
{
    for (int32_t i = 0; i < op->param_count; i++)
        if (name == clops_op_param(op, i)->name)
            return clops_op_param(op, i);
    return nullptr;
}

// The C arguments of a call of `op`; they point into `args`, which must outlive them.
inline std::vector<clops_arg> c_args(const clops_op *op, const std::vector<arg> &args)
{
    std::vector<clops_arg> out;
    out.reserve(args.size());
    for (const arg &a : args)
        out.push_back(a.to_c(find_param(op, a.name())));
    return out;
}

// The operator named `name`; throws CLOPS_ERR_NOT_FOUND with the plugin's message.
inline const clops_op *find_op(const plugin &lib, const std::string &name)
{
    const clops_op *op = lib.api->op_find(name.c_str());
    if (op == nullptr)
        lib.check(CLOPS_ERR_NOT_FOUND);
    return op;
}

// Throws CLOPS_ERR_ABI_MISMATCH when the loaded plugin predates ABI 1.4's non-blocking calls.
inline void need_streams(const plugin &lib, const char *what)
{
    if (!CLOPS_API_HAS(lib.api, buffer_copy))
        fail(CLOPS_ERR_ABI_MISMATCH, std::string(what) + ": the loaded libclops serves ABI 1." +
                                         std::to_string(lib.api->abi_minor) +
                                         "; streams and events need 1.4");
}

// Throws CLOPS_ERR_ABI_MISMATCH when the loaded plugin predates ABI 1.4's interop members.
inline void need_interop(const plugin &lib, const char *what)
{
    if (!CLOPS_API_HAS(lib.api, memory_stats))
        fail(CLOPS_ERR_ABI_MISMATCH, std::string(what) + ": the loaded libclops serves ABI 1." +
                                         std::to_string(lib.api->abi_minor) +
                                         "; OpenCL interop needs 1.4");
}

// Throws CLOPS_ERR_ABI_MISMATCH naming `member` when the loaded plugin's table ends before it
// (`has`: CLOPS_API_HAS of it), for members appended to ABI 1.4 after its first release.
inline void need_appended(const plugin &lib, bool has, const char *member, const char *what)
{
    if (!has)
        fail(CLOPS_ERR_ABI_MISMATCH, std::string(what) + ": the loaded libclops (ABI 1." +
                                         std::to_string(lib.api->abi_minor) + ") has no " + member +
                                         ": its table predates it");
}

// Host memory registration, appended to ABI 1.4 after buffer_copy.
inline void need_host_register(const plugin &lib, const char *what)
{
    need_appended(lib, CLOPS_API_HAS(lib.api, host_unregister), "host_register", what);
}

// Buffers on any device of a pool, appended to ABI 1.4 after host_unregister.
inline void need_buffer_create_on(const plugin &lib, const char *what)
{
    need_appended(lib, CLOPS_API_HAS(lib.api, buffer_create_on), "buffer_create_on", what);
}
} // namespace detail

// The device memory clops holds on one device (pool::memory_stats), over every pool of the
// process on it; the host's wrapped cl_mem objects are not counted.
struct device_memory {
    int64_t allocated_bytes = 0; // now
    int64_t peak_bytes = 0;      // the most at once since the device was first opened
    int64_t buffers = 0;         // cl_mem objects clops holds on it now
    int64_t limit_bytes = 0;     // device_memory_percent of its global memory
};

class pool;

// ---- Device buffers -------------------------------------------------------------------------

// Device memory of a pool, on its primary device or another (create_buffer), or the host's cl_mem
// wrapped without a copy (pool::wrap: retained while the buffer lives, never freed by clops, not
// counted against the pool's memory limit). Keeps the pool alive. Move-only.
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

    // Interop: the cl_mem behind the buffer (a `cl_mem`, as void *) and its pool's cl_context,
    // not retained (clRetainMemObject keeps them past the buffer), and the pool's device index.
    void *cl_mem() const
    {
        return cl().cl_mem;
    }
    void *cl_context() const
    {
        return cl().cl_context;
    }
    int32_t device() const
    {
        return cl().device;
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
    clops_buffer_cl_args cl() const
    {
        clops_buffer *b = checked();
        detail::need_interop(*pool_->lib, "buffer::cl_mem");
        clops_buffer_cl_args a{};
        a.struct_size = sizeof a;
        a.buffer = b;
        pool_->lib->check(api().buffer_cl(&a));
        return a;
    }

    std::shared_ptr<detail::pool_state> pool_;
    clops_buffer *handle_ = nullptr;
};

// ---- Non-blocking calls (ABI 1.4): events and streams --------------------------------------

enum class event_state : int32_t {
    queued = CLOPS_EVENT_QUEUED,
    running = CLOPS_EVENT_RUNNING,
    complete = CLOPS_EVENT_COMPLETE,
    failed = CLOPS_EVENT_FAILED,
    cancelled = CLOPS_EVENT_CANCELLED
};

namespace detail
{
// What event::future() hands to the completion callback: the promise, owned by the callback,
// which runs exactly once per event (on a clops thread) and frees it.
struct event_promise {
    std::promise<void> promise;
    const clops_api *api;
};

// The completion callback behind event::future(): the call's outcome into the promise, as a
// value or as a clops::error with the event's status and message. Nothing may escape into C.
inline void fulfil_promise(clops_event *e, int32_t status, void *user)
{
    std::unique_ptr<event_promise> p(static_cast<event_promise *>(user));
    try {
        if (status == CLOPS_OK) {
            p->promise.set_value();
            return;
        }
        clops_event_query_args q{};
        q.struct_size = sizeof q;
        q.event = e;
        std::string message =
            p->api->event_query(&q) == CLOPS_OK && q.message != nullptr ? q.message : "";
        p->promise.set_exception(
            std::make_exception_ptr(error(status, p->api->status_name(status), message)));
    } catch (...) {
        try {
            p->promise.set_exception(std::current_exception());
        } catch (...) { // satisfied already: nothing is left to tell
        }
    }
}
} // namespace detail

// The outcome of one submitted call (move-only; released by the destructor, which does not
// wait: the call goes on). Host memory the call names must stay valid, and its inputs
// unwritten, until the event has its outcome (ready(), wait(), or the future). An event keeps
// its pool alive, and stays usable after its stream is released.
class event
{
  public:
    event() = default;
    event(event &&other) noexcept
        : pool_(std::move(other.pool_)), handle_(std::exchange(other.handle_, nullptr))
    {
    }
    event &operator=(event &&other) noexcept
    {
        if (this != &other) {
            reset();
            pool_ = std::move(other.pool_);
            handle_ = std::exchange(other.handle_, nullptr);
        }
        return *this;
    }
    event(const event &) = delete;
    event &operator=(const event &) = delete;
    ~event()
    {
        reset();
    }

    explicit operator bool() const noexcept
    {
        return handle_ != nullptr;
    }
    clops_event *get() const noexcept
    {
        return handle_;
    }

    event_state state() const
    {
        return static_cast<event_state>(query().state);
    }
    // CLOPS_OK until the call failed or was cancelled, then why; message() says more.
    int32_t status() const
    {
        return query().status;
    }
    std::string message() const
    {
        clops_event_query_args q = query();
        return q.message != nullptr ? q.message : "";
    }
    // The fraction of the call done, 0 to 1.
    double progress() const
    {
        return query().progress;
    }
    // Whether the call has its outcome (complete, failed or cancelled).
    bool ready() const
    {
        return state() >= event_state::complete;
    }

    // Waits for the outcome with no limit. The call's own failure is not thrown here: result().
    void wait() const
    {
        wait_ns(-1);
    }
    // Waits at most `timeout`: true once the call has its outcome, false when the time passed
    // first (CLOPS_ERR_TIMEOUT). Not from a completion callback (the plugin refuses it there).
    template <class Rep, class Period> bool wait(std::chrono::duration<Rep, Period> timeout) const
    {
        auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(timeout).count();
        return wait_ns(ns < 0 ? 0 : static_cast<int64_t>(ns));
    }
    // Waits, then throws clops::error (status and message) when the call failed or was
    // cancelled (CLOPS_ERR_CANCELLED).
    void result() const
    {
        wait();
        clops_event_query_args q = query();
        if (q.status != CLOPS_OK)
            throw error(q.status, api().status_name(q.status), q.message ? q.message : "");
    }

    // Asks the call to stop at its next unit of work; it then ends cancelled, its host outputs
    // untouched. A call that has its outcome keeps it. Never an error.
    void cancel() const
    {
        clops_event_cancel_args a{};
        a.struct_size = sizeof a;
        a.event = checked();
        lib().check(api().event_cancel(&a));
    }

    // A std::future of the outcome: get() returns once the call completed, or throws its
    // clops::error. It takes the event's one completion callback: call it once per event. The
    // future works without the event object (which may be destroyed before the call ends).
    std::future<void> future()
    {
        auto p = std::make_unique<detail::event_promise>();
        p->api = &api();
        std::future<void> f = p->promise.get_future();
        clops_event_callback_args a{};
        a.struct_size = sizeof a;
        a.event = checked();
        a.fn = &detail::fulfil_promise;
        a.user = p.get();
        lib().check(api().event_on_complete(&a));
        p.release(); // the callback owns it now
        return f;
    }

    // Interop: the call's completion as a cl_event (a `cl_event`, as void *) of the stream's
    // context, retained for the caller, who releases it with clReleaseEvent.
    void *cl_event() const
    {
        clops_event_cl_args a{};
        a.struct_size = sizeof a;
        a.event = checked();
        lib().check(api().event_cl_event(&a));
        return a.cl_event;
    }

    void reset() noexcept
    {
        if (handle_ != nullptr) {
            clops_event_release_args a{};
            a.struct_size = sizeof a;
            a.event = handle_;
            pool_->lib->api->event_release(&a);
        }
        handle_ = nullptr;
        pool_.reset();
    }

  private:
    friend class stream;
    event(std::shared_ptr<detail::pool_state> p, clops_event *h) : pool_(std::move(p)), handle_(h)
    {
    }
    clops_event *checked() const
    {
        if (handle_ == nullptr)
            detail::fail(CLOPS_ERR_INVALID_ARGUMENT, "event: the event is empty (moved from)");
        return handle_;
    }
    const detail::plugin &lib() const
    {
        checked();
        return *pool_->lib;
    }
    const clops_api &api() const
    {
        return *lib().api;
    }
    clops_event_query_args query() const
    {
        clops_event_query_args q{};
        q.struct_size = sizeof q;
        q.event = checked();
        lib().check(api().event_query(&q));
        return q;
    }
    bool wait_ns(int64_t timeout_ns) const
    {
        clops_event *e = checked();
        clops_event_wait_args w{};
        w.struct_size = sizeof w;
        w.count = 1;
        w.events = &e;
        w.timeout_ns = timeout_ns;
        w.wait_all = 1;
        int32_t status = api().event_wait(&w);
        if (status == CLOPS_ERR_TIMEOUT)
            return false;
        lib().check(status);
        return true;
    }

    std::shared_ptr<detail::pool_state> pool_;
    clops_event *handle_ = nullptr;
};

// Events a call waits for: `{e1, e2}`.
using events_after = std::vector<std::reference_wrapper<const event>>;

// An in-order queue of calls on one device of a pool (move-only): each call starts after the
// calls submitted before it have completed, and two streams run side by side. Calls on
// different streams are ordered only through events (`after`, or wait_events). The destructor
// waits until every call submitted to it has its outcome; its events stay valid.
class stream
{
  public:
    stream() = default;
    stream(stream &&other) noexcept
        : pool_(std::move(other.pool_)), handle_(std::exchange(other.handle_, nullptr))
    {
    }
    stream &operator=(stream &&other) noexcept
    {
        if (this != &other) {
            reset();
            pool_ = std::move(other.pool_);
            handle_ = std::exchange(other.handle_, nullptr);
        }
        return *this;
    }
    stream(const stream &) = delete;
    stream &operator=(const stream &) = delete;
    ~stream()
    {
        reset();
    }

    explicit operator bool() const noexcept
    {
        return handle_ != nullptr;
    }
    clops_stream *get() const noexcept
    {
        return handle_;
    }

    // Submits any operator by name, arguments as pool::invoke takes them, after the events in
    // `after`; returns at once with the call's event. A call its checks refuse throws here, and
    // nothing was queued. Views' host memory must stay valid until the event has its outcome.
    event submit(const std::string &op_name, std::initializer_list<arg> args,
                 const events_after &after = {}) const
    {
        return submit(op_name, std::vector<arg>(args), after);
    }
    event submit(const std::string &op_name, const std::vector<arg> &args,
                 const events_after &after = {}) const
    {
        const detail::plugin &plugin = lib();
        const clops_op *op = detail::find_op(plugin, op_name);
        std::vector<clops_arg> c = detail::c_args(op, args);
        std::vector<clops_event *> waits = handles(after);
        clops_submit_args a{};
        a.struct_size = sizeof a;
        a.op_index = plugin.api->op_index(op);
        a.stream = checked();
        a.args = c.data();
        a.nargs = static_cast<int32_t>(c.size());
        a.arg_size = sizeof(clops_arg);
        a.wait_events = waits.data();
        a.wait_count = static_cast<int32_t>(waits.size());
        plugin.check(plugin.api->submit(&a));
        return adopt(a.event);
    }

    // C = alpha op(A) op(B) + beta C, submitted (pool::gemm's arguments).
    event gemm(const tensor_view &a, const tensor_view &b, const tensor_view &c, double alpha = 1,
               double beta = 0, trans trans_a = trans::none, trans trans_b = trans::none,
               const events_after &after = {}) const
    {
        return submit("gemm",
                      {{"a", a},
                       {"b", b},
                       {"c", c},
                       {"trans_a", static_cast<int32_t>(trans_a)},
                       {"trans_b", static_cast<int32_t>(trans_b)},
                       {"alpha", alpha},
                       {"beta", beta}},
                      after);
    }

    // Copies `bytes` between buffers of the stream's pool, as a call on the stream.
    event copy(const buffer &src, int64_t src_offset, const buffer &dst, int64_t dst_offset,
               int64_t bytes, const events_after &after = {}) const
    {
        const detail::plugin &plugin = lib();
        std::vector<clops_event *> waits = handles(after);
        clops_buffer_copy_args a{};
        a.struct_size = sizeof a;
        a.stream = checked();
        a.src = src.get();
        a.src_offset = src_offset;
        a.dst = dst.get();
        a.dst_offset = dst_offset;
        a.bytes = bytes;
        a.wait_events = waits.data();
        a.wait_count = static_cast<int32_t>(waits.size());
        plugin.check(plugin.api->buffer_copy(&a));
        return adopt(a.event);
    }

    // Every call submitted after this starts only once `events` (of any stream of the pool)
    // completed; a failed or cancelled one fails those calls with CLOPS_ERR_CANCELLED.
    void wait_events(const events_after &events) const
    {
        std::vector<clops_event *> waits = handles(events);
        clops_stream_wait_args a{};
        a.struct_size = sizeof a;
        a.event_count = static_cast<int32_t>(waits.size());
        a.stream = checked();
        a.events = waits.data();
        lib().check(lib().api->stream_wait(&a));
    }

    // Releases the stream now, once every call submitted to it has its outcome.
    void reset() noexcept
    {
        if (handle_ != nullptr) {
            clops_stream_release_args a{};
            a.struct_size = sizeof a;
            a.stream = handle_;
            pool_->lib->api->stream_release(&a);
        }
        handle_ = nullptr;
        pool_.reset();
    }

  private:
    friend class pool;
    stream(std::shared_ptr<detail::pool_state> p, clops_stream *h) : pool_(std::move(p)), handle_(h)
    {
    }
    clops_stream *checked() const
    {
        if (handle_ == nullptr)
            detail::fail(CLOPS_ERR_INVALID_ARGUMENT, "stream: the stream is empty (moved from)");
        return handle_;
    }
    const detail::plugin &lib() const
    {
        checked();
        return *pool_->lib;
    }
    static std::vector<clops_event *> handles(const events_after &events)
    {
        std::vector<clops_event *> out;
        out.reserve(events.size());
        for (const event &e : events) {
            if (!e)
                detail::fail(CLOPS_ERR_INVALID_ARGUMENT,
                             "stream: an event waited for is empty (moved from)");
            out.push_back(e.get());
        }
        return out;
    }
    // The plugin's new event, owned from here on (released if wrapping it throws).
    event adopt(clops_event *e) const
    {
        try {
            return event(pool_, e);
        } catch (...) {
            clops_event_release_args r{};
            r.struct_size = sizeof r;
            r.event = e;
            pool_->lib->api->event_release(&r);
            throw;
        }
    }

    std::shared_ptr<detail::pool_state> pool_;
    clops_stream *handle_ = nullptr;
};

// ---- Registered host memory (ABI 1.4) ------------------------------------------------------

// Host memory registered with a pool (pool::register_host): the range is page-locked for the
// pool's devices, so that the upload of a host operand lying wholly inside it is one DMA straight
// from it instead of a copy into clops' pinned staging blocks and a DMA from there. Registering
// costs about as much as copying the range two or three times: it pays for memory that many
// calls read. Outputs still arrive through staging blocks. Move-only; the destructor unregisters
// (never throws; unregister() reports a refusal). The memory must stay allocated while it is
// registered and until every submitted call naming it has its outcome; unregistering while such a
// call reads it is allowed (the range stays page-locked until that call completes). Keeps its
// pool alive.
class host_registration
{
  public:
    host_registration() = default;
    host_registration(host_registration &&other) noexcept
        : pool_(std::move(other.pool_)), data_(std::exchange(other.data_, nullptr)),
          bytes_(std::exchange(other.bytes_, 0))
    {
    }
    host_registration &operator=(host_registration &&other) noexcept
    {
        if (this != &other) {
            reset();
            pool_ = std::move(other.pool_);
            data_ = std::exchange(other.data_, nullptr);
            bytes_ = std::exchange(other.bytes_, 0);
        }
        return *this;
    }
    host_registration(const host_registration &) = delete;
    host_registration &operator=(const host_registration &) = delete;
    ~host_registration()
    {
        reset();
    }

    explicit operator bool() const noexcept
    {
        return data_ != nullptr;
    }
    void *data() const noexcept
    {
        return data_;
    }
    std::size_t bytes() const noexcept
    {
        return bytes_;
    }

    // Unregisters now; the object is empty afterwards, also when the plugin refuses (it then
    // holds no such range, and the clops::error says so).
    void unregister()
    {
        if (data_ == nullptr)
            detail::fail(CLOPS_ERR_INVALID_ARGUMENT,
                         "host_registration: the registration is empty (moved from, released or "
                         "unregistered)");
        std::shared_ptr<detail::pool_state> p = std::move(pool_);
        clops_host_register_args a = args(*p, std::exchange(data_, nullptr));
        bytes_ = 0;
        p->lib->check(p->lib->api->host_unregister(&a));
    }

    // Gives the range up without unregistering it: it stays registered until its pool is
    // released (the memory stays allocated until then) or host_unregister is called with the
    // returned pointer. The object is empty afterwards.
    void *release() noexcept
    {
        pool_.reset();
        bytes_ = 0;
        return std::exchange(data_, nullptr);
    }

    // Unregisters now, ignoring a refusal (the plugin refuses only a range it no longer holds).
    void reset() noexcept
    {
        if (data_ != nullptr) {
            clops_host_register_args a = args(*pool_, data_);
            pool_->lib->api->host_unregister(&a);
        }
        data_ = nullptr;
        bytes_ = 0;
        pool_.reset();
    }

  private:
    friend class pool;
    host_registration(std::shared_ptr<detail::pool_state> p, void *data, std::size_t bytes) noexcept
        : pool_(std::move(p)), data_(data), bytes_(bytes)
    {
    }
    // host_unregister's arguments: the range is named by its start alone.
    static clops_host_register_args args(const detail::pool_state &p, void *data) noexcept
    {
        clops_host_register_args a{};
        a.struct_size = sizeof a;
        a.pool = p.handle;
        a.data = data;
        return a;
    }

    std::shared_ptr<detail::pool_state> pool_;
    void *data_ = nullptr;
    std::size_t bytes_ = 0;
};

// ---- Pools ----------------------------------------------------------------------------------

// Devices, queues and compiled kernels; shared by threads (its own calls are synchronous; streams
// made from it submit calls that return at once). Move-only:
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

    // Device memory on the pool's primary device (device 0), through buffer_create, which every
    // library serves.
    buffer create_buffer(int64_t bytes) const
    {
        clops_buffer *b = nullptr;
        lib().check(api().buffer_create(checked(), bytes, &b));
        return buffer(state_, b);
    }
    // Device memory on device `device` of the pool (ABI 1.4, buffer_create_on; a library
    // without it throws CLOPS_ERR_ABI_MISMATCH naming it, a device the pool lacks
    // CLOPS_ERR_NOT_FOUND naming 'device'). A call whose device buffers all live on one device
    // runs on that device, whatever device its operator is configured on.
    buffer create_buffer(int64_t bytes, int32_t device) const
    {
        detail::need_buffer_create_on(lib(), "create_buffer");
        clops_buffer_create_args a{};
        a.struct_size = sizeof a;
        a.device = device;
        a.pool = checked();
        a.bytes = bytes;
        lib().check(api().buffer_create_on(&a));
        return buffer(state_, a.buffer);
    }

    // Interop (ABI 1.4): a pool on the host's OpenCL objects, through the default library (see
    // library::create_pool_from_cl). Defined after clops::library.
    static pool from_cl(void *cl_context, const std::vector<void *> &cl_devices,
                        const std::vector<void *> &cl_queues = {}, const std::string &config = "");

    // The host's cl_mem (a buffer of the pool's context, as void *) as a clops buffer on device
    // `device`, without a copy: operators read and write it. clops retains it while the buffer
    // lives and never frees it; it is not counted against the pool's memory limit.
    buffer wrap(void *cl_mem, int32_t device = 0) const
    {
        detail::need_interop(lib(), "wrap");
        clops_buffer_wrap_args a{};
        a.struct_size = sizeof a;
        a.device = device;
        a.pool = checked();
        a.cl_mem = cl_mem;
        lib().check(api().buffer_wrap_cl(&a));
        try {
            return buffer(state_, a.buffer);
        } catch (...) {
            api().buffer_release(a.buffer);
            throw;
        }
    }

    // The device memory clops holds on device `device` of the pool (every pool of the process
    // on that device counted; wrapped buffers not).
    device_memory memory_stats(int32_t device = 0) const
    {
        detail::need_interop(lib(), "memory_stats");
        clops_memory_stats_args a{};
        a.struct_size = sizeof a;
        a.device = device;
        a.pool = checked();
        lib().check(api().memory_stats(&a));
        device_memory m;
        m.allocated_bytes = a.allocated_bytes;
        m.peak_bytes = a.peak_bytes;
        m.buffers = a.buffers;
        m.limit_bytes = a.limit_bytes;
        return m;
    }

    // Registers [data, data + bytes) with the pool (ABI 1.4): see host_registration. Ranges of
    // one pool may not overlap (CLOPS_ERR_INVALID_ARGUMENT, "overlaps").
    host_registration register_host(void *data, std::size_t bytes) const
    {
        detail::need_host_register(lib(), "register_host");
        if (bytes > static_cast<std::size_t>(std::numeric_limits<int64_t>::max()))
            detail::fail(CLOPS_ERR_INVALID_ARGUMENT,
                         "register_host: parameter 'bytes' = " + std::to_string(bytes) +
                             "; expected at most INT64_MAX");
        clops_host_register_args a{};
        a.struct_size = sizeof a;
        a.pool = checked();
        a.data = data;
        a.bytes = static_cast<int64_t>(bytes);
        lib().check(api().host_register(&a));
        return host_registration(state_, data, bytes);
    }
    // A vector's elements; the vector must not reallocate while they are registered.
    template <class T> host_registration register_host(std::vector<T> &v) const
    {
        return register_host(v.data(), v.size() * sizeof(T));
    }

    // A stream on device `device` of the pool (ABI 1.4). Interop: `cl_queue`, an in-order
    // cl_command_queue of the host on that device and the pool's context, is used instead of a
    // queue of clops' own (retained while the stream lives, never freed by clops).
    stream create_stream(int32_t device = 0, void *cl_queue = nullptr) const
    {
        detail::need_streams(lib(), "create_stream");
        clops_stream_create_args a{};
        a.struct_size = sizeof a;
        a.device = device;
        a.pool = checked();
        a.cl_queue = cl_queue;
        lib().check(api().stream_create(&a));
        try {
            return stream(state_, a.stream);
        } catch (...) {
            clops_stream_release_args r{};
            r.struct_size = sizeof r;
            r.stream = a.stream;
            api().stream_release(&r);
            throw;
        }
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
        std::vector<clops_arg> c_args = detail::c_args(op, args);
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
        return detail::find_op(lib(), name);
    }
    using entry_fn = void (*)(void);
    entry_fn entry(const char *name) const
    {
        return find(name)->entry;
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
    // Finds the plugin by the hosts' rule (top of this file): $CLOPS_LIBRARY alone when it is
    // set, else the first candidate that loads and serves ABI 1 of: beside the program (Windows),
    // CLOPS_PLUGIN_PATH, the system's search. The error names each candidate and why.
    library() : plugin_(std::make_shared<detail::plugin>())
    {
        const char *named = std::getenv("CLOPS_LIBRARY");
        if (named != nullptr && named[0] != '\0') {
            std::string why;
            if (!load(named, why))
                detail::fail(why.rfind("cannot load", 0) == 0 ? CLOPS_ERR_NOT_FOUND
                                                              : CLOPS_ERR_ABI_MISMATCH,
                             why + " (from $CLOPS_LIBRARY)");
            return;
        }
        std::string reasons;
        for (const std::string &candidate : detail::default_plugin_candidates()) {
            std::string why;
            if (load(candidate, why))
                return;
            const std::string prefix = "cannot load libclops: ";
            if (why.rfind(prefix, 0) == 0)
                why.erase(0, prefix.size());
            reasons += (reasons.empty() ? "" : "; ") + why;
        }
        detail::fail(CLOPS_ERR_NOT_FOUND, "cannot load libclops: " + reasons +
                                              " (set CLOPS_LIBRARY to the plugin's file)");
    }

    // Loads the plugin at `path` and nothing else.
    explicit library(const std::string &path) : plugin_(std::make_shared<detail::plugin>())
    {
        std::string why;
        if (!load(path, why))
            detail::fail(why.rfind("cannot load", 0) == 0 ? CLOPS_ERR_NOT_FOUND
                                                          : CLOPS_ERR_ABI_MISMATCH,
                         why);
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
    // Interop (ABI 1.4): a pool on the host's cl_context and its devices (cl_device_id, as
    // void *; device i of the pool is cl_devices[i]), with one in-order queue per device for the
    // pool's synchronous calls, or none (clops opens its own on the context). All of them are
    // retained while the pool lives and never freed by clops. `config`: the libconfig text
    // create_pool_from_string takes, without a `devices` section ("": the defaults).
    pool create_pool_from_cl(void *cl_context, const std::vector<void *> &cl_devices,
                             const std::vector<void *> &cl_queues = {},
                             const std::string &config = "") const
    {
        detail::need_interop(checked(), "create_pool_from_cl");
        if (!cl_queues.empty() && cl_queues.size() != cl_devices.size())
            detail::fail(CLOPS_ERR_INVALID_ARGUMENT,
                         "create_pool_from_cl: " + std::to_string(cl_queues.size()) +
                             " queues for " + std::to_string(cl_devices.size()) +
                             " devices (one per device, or none)");
        clops_pool_from_cl_args a{};
        a.struct_size = sizeof a;
        a.device_count = static_cast<int32_t>(cl_devices.size());
        a.cl_context = cl_context;
        a.cl_devices = cl_devices.data();
        a.cl_queues = cl_queues.empty() ? nullptr : cl_queues.data();
        a.config_text = config.empty() ? nullptr : config.c_str();
        checked().check(api().pool_create_from_cl(&a));
        return wrap(a.pool);
    }

  private:
    // Opens `path` and checks its table; false with the reason in `why` (starting "cannot
    // load" when the file did not load or has no entry).
    bool load(const std::string &path, std::string &why)
    {
        void *handle = detail::open_library(path, why);
        if (handle == nullptr) {
            why = "cannot load libclops: " + why;
            return false;
        }
        clops_plugin_entry_fn entry = detail::plugin_entry(handle);
        const clops_api *api = entry != nullptr ? entry(CLOPS_ABI_MAJOR) : nullptr;
        if (entry == nullptr)
            why = "cannot load libclops: " + path + ": no symbol clops_plugin_entry";
        else if (api == nullptr || api->abi_major != CLOPS_ABI_MAJOR || !CLOPS_API_HAS(api, invoke))
            why = path + ": the plugin does not serve ABI " + std::to_string(CLOPS_ABI_MAJOR) +
                  " with every member this binding uses";
        else {
            plugin_->handle = handle;
            plugin_->api = api;
            return true;
        }
        detail::close_library(handle);
        return false;
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

inline pool pool::from_cl(void *cl_context, const std::vector<void *> &cl_devices,
                          const std::vector<void *> &cl_queues, const std::string &config)
{
    return library().create_pool_from_cl(cl_context, cl_devices, cl_queues, config);
}

} // namespace clops

#endif // CLOPS_HPP
