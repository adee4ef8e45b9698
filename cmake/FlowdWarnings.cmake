# Warnings are errors in our own code only; third-party headers come in as
# SYSTEM includes through their imported targets.
add_library(flowd_warnings INTERFACE)
target_compile_options(flowd_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Werror -Wshadow -Wnon-virtual-dtor -Wno-error=deprecated-declarations>)

if(FLOWD_SANITIZE)
  add_compile_options(-fsanitize=${FLOWD_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${FLOWD_SANITIZE})
endif()

# GCC 12 reports -Wrestrict inside libstdc++ for `"literal" + std::string` at
# -O3 (GCC bug 105651, fixed in 13); it is not a defect in our code.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  target_compile_options(flowd_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Wno-restrict>)
endif()

# Under -fsanitize, GCC's flow analysis sees the sanitizers' instrumentation
# and reports -Wmaybe-uninitialized inside libstdc++ (std::regex's
# std::function members, plugins/io/list_files.cpp); GCC's manual warns that
# sanitizers can cause such false warnings. Kept a warning, not an error, in
# sanitizer builds only: the Release build still fails on it.
if(FLOWD_SANITIZE AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  target_compile_options(flowd_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Wno-error=maybe-uninitialized>)
endif()

# In a unity build (FLOWD_UNITY_BUILD) a .cpp file is no longer the main
# file of its compilation, so GCC's -Wsubobject-linkage fires for every
# class of that file with a member of a type from its anonymous namespace
# (a pimpl's Impl holding its file's helpers). The warning guards headers
# against ODR trouble, which these files, never included elsewhere, cannot
# cause; the one-file-at-a-time build still checks it.
if(FLOWD_UNITY_BUILD AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  target_compile_options(flowd_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Wno-subobject-linkage>)
endif()
