# cmake/mingw-w64.cmake — toolchain for 64-bit Windows (x86_64-w64-mingw32, Debian's MinGW-w64),
# with tests run under Wine by .ci/wine-run. The dependencies come from .ci/windows-deps PREFIX:
#   .ci/windows-deps build-windeps
#   cmake -S . -B build-win -DCMAKE_TOOLCHAIN_FILE=$PWD/cmake/mingw-w64.cmake \
#         -DCLOPS_WIN_DEPS=$PWD/build-windeps
#   cmake --build build-win -j"$(nproc)" && (cd build-win && ctest)
# Both paths absolute: CMake 3.25 looks for a relative toolchain file in the build directory.
# CLOPS_WIN_DEPS may also come from the environment. Tests run under Wine with a prefix of the
# build's own (build-win/wine); .ci/wine-run --prefix $PWD/build-win/wine --stop ends its server
# where no ctest fixture does. pkg-config reads only PREFIX/lib/pkgconfig (OpenCL.pc,
# libconfig.pc, check.pc, lapacke.pc, libpng.pc, zlib.pc), and find_* search only PREFIX and the
# MinGW sysroot, so nothing of the Linux host's /usr leaks into the build.

set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(clops_mingw_host x86_64-w64-mingw32)
set(clops_mingw_sysroot /usr/${clops_mingw_host})

# The plain names follow Debian's alternatives (win32 thread model by default); for C the models
# differ in nothing (pthread.h and libwinpthread are there with both), for C++ in std::thread.
set(CMAKE_C_COMPILER ${clops_mingw_host}-gcc)
# C++: the posix thread model, whose libstdc++ has std::thread and std::future (the C++ binding's
# submitted calls return futures); the win32 model's has neither in GCC 12.
set(CMAKE_CXX_COMPILER ${clops_mingw_host}-g++-posix)
set(CMAKE_RC_COMPILER ${clops_mingw_host}-windres)

# The toolchain file is read again for each try_compile project, which sees only the variables
# listed here.
if(NOT CLOPS_WIN_DEPS AND DEFINED ENV{CLOPS_WIN_DEPS})
  set(CLOPS_WIN_DEPS "$ENV{CLOPS_WIN_DEPS}")
endif()
if(NOT CLOPS_WIN_DEPS OR NOT EXISTS "${CLOPS_WIN_DEPS}/lib/pkgconfig/OpenCL.pc")
  message(FATAL_ERROR "CLOPS_WIN_DEPS='${CLOPS_WIN_DEPS}' is not a prefix made by .ci/windows-deps "
                      "(no lib/pkgconfig/OpenCL.pc): run .ci/windows-deps build-windeps and pass "
                      "-DCLOPS_WIN_DEPS=$PWD/build-windeps")
endif()
get_filename_component(CLOPS_WIN_DEPS "${CLOPS_WIN_DEPS}" ABSOLUTE)
set(CLOPS_WIN_DEPS "${CLOPS_WIN_DEPS}" CACHE PATH "Prefix made by .ci/windows-deps")
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES CLOPS_WIN_DEPS)

set(CMAKE_FIND_ROOT_PATH ${CLOPS_WIN_DEPS} ${clops_mingw_sysroot})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# The host's pkg-config, told to read the deps prefix's .pc files and no others (LIBDIR replaces
# the default search path, /usr/lib/x86_64-linux-gnu/pkgconfig among it).
set(ENV{PKG_CONFIG_LIBDIR} "${CLOPS_WIN_DEPS}/lib/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "")

# libgcc (and libstdc++ for the C++ hosts) linked in: a DLL or test then needs no MinGW runtime
# DLL beside it, only libwinpthread-1.dll where pthreads are used (Check's -pthread).
foreach(kind EXE SHARED MODULE)
  set(CMAKE_${kind}_LINKER_FLAGS_INIT "-static-libgcc -static-libstdc++")
endforeach()

# ctest runs each test program (an executable target given to add_test) under Wine.
get_filename_component(clops_wine_run "${CMAKE_CURRENT_LIST_DIR}/../.ci/wine-run" ABSOLUTE)
# Each build directory has a Wine prefix of its own (BUILD/wine, made on first use), so that
# wine-run --stop there ends only its own tests' Wine.
set(CMAKE_CROSSCOMPILING_EMULATOR
    "${clops_wine_run};--prefix;${CMAKE_BINARY_DIR}/wine;--deps;${CLOPS_WIN_DEPS}")
