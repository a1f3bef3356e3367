// The README's gemm through the C++ binding (hosts/cpp/clops.hpp), as a consumer builds it.
#include <clops.hpp>

#include <cstdio>

int main()
{
    try {
        clops::library lib; // $CLOPS_LIBRARY, else CLOPS_PLUGIN_PATH from clops::headers
        clops::pool pool = lib.create_pool();
        double a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, 0, 0, 1, 1, 1}, c[4] = {0, 0, 0, 0};
        pool.gemm(clops::view(a, 2, 3), clops::view(b, 3, 2), clops::view(c, 2, 2));
        std::printf("C = [%g %g; %g %g]\n", c[0], c[1], c[2], c[3]);
        return 0;
    } catch (const clops::error &e) {
        std::fprintf(stderr, "clops: %s\n", e.what());
        return 1;
    }
}
