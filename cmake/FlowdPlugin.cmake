# flowd_add_plugin(NAME source... [OUTPUT_DIRECTORY dir])
#
# Builds the flowd plugin NAME as flowd-NAME.so, a shared module linked only
# against flowd::sdk. Used in-tree and by out-of-tree plugins through the
# installed flowd package.
function(flowd_add_plugin name)
  cmake_parse_arguments(ARG "" "OUTPUT_DIRECTORY" "" ${ARGN})
  set(target flowd-${name})
  add_library(${target} MODULE ${ARG_UNPARSED_ARGUMENTS})
  target_link_libraries(${target} PRIVATE flowd::sdk)
  set_target_properties(${target} PROPERTIES
    PREFIX ""
    OUTPUT_NAME ${target}
    CXX_VISIBILITY_PRESET default
    POSITION_INDEPENDENT_CODE ON)
  if(ARG_OUTPUT_DIRECTORY)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${ARG_OUTPUT_DIRECTORY})
  endif()
  # Refuse undefined symbols at link time rather than at dlopen time.
  target_link_options(${target} PRIVATE -Wl,--no-undefined)
  # The SDK is header-only: its inline functions belong to the plugin. Hidden
  # and not interposable, they inline and are called without the PLT (an
  # Array::stride() in a pixel loop cost a quarter of an operator's time).
  target_compile_options(${target} PRIVATE -fvisibility-inlines-hidden
    $<$<CXX_COMPILER_ID:GNU>:-fno-semantic-interposition>)
  # Whether the plugin's GPU variants are built: registration lists an
  # operator's gpu() variant only where this is 1 (flowd/gpu.hpp). The
  # plugin adds the files defining gpu() only when FLOWD_HAVE_CUDA is true.
  if(FLOWD_HAVE_CUDA)
    target_compile_definitions(${target} PRIVATE FLOWD_WITH_CUDA=1)
  else()
    target_compile_definitions(${target} PRIVATE FLOWD_WITH_CUDA=0)
  endif()
endfunction()
