# hostile_ints.cmake — included by hosts/cli/CMakeLists.txt inside if(CLOPS_BUILD_TESTS).
