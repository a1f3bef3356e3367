# hostile_outputs.cmake — included by hosts/cli/CMakeLists.txt inside if(CLOPS_BUILD_TESTS).
