# flowd_sdk_hash(OUT_VAR INCLUDE_DIR)
#
# The SDK's layout fingerprint: SHA-256 over the public headers
# INCLUDE_DIR/flowd/*.hpp, taken in name order, each as its name and its
# canonical text. Engine and plugins embed it (flowd/sdk_hash.hpp, through
# flowd::abi_fingerprint()), so a plugin compiled against headers that differ
# in any declaration — a virtual function added to Context, a member added to
# Item — is refused at load even when the ABI number was not raised.
#
# Canonical text: carriage returns, trailing blanks, blank lines and lines
# that are only a // comment are dropped, so re-wording a comment line does
# not set every installed plugin apart. Anything else counts, including
# comments after code on the same line (erring on the side of a rebuild).
#
# Each header becomes a configure dependency: editing one re-runs CMake,
# which regenerates the hash with the next build.
function(flowd_sdk_hash out_var include_dir)
  file(GLOB headers RELATIVE ${include_dir} CONFIGURE_DEPENDS ${include_dir}/flowd/*.hpp)
  list(REMOVE_ITEM headers flowd/sdk_hash.hpp flowd/version.hpp)
  list(SORT headers)
  if(NOT headers)
    message(FATAL_ERROR "flowd_sdk_hash: no headers in ${include_dir}/flowd")
  endif()
  set(text "")
  foreach(h IN LISTS headers)
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${include_dir}/${h})
    file(READ ${include_dir}/${h} content)
    string(REPLACE "\r" "" content "\n${content}\n")
    string(REGEX REPLACE "[ \t]+\n" "\n" content "${content}")
    string(REGEX REPLACE "\n[ \t]*//[^\n]*" "\n" content "${content}")
    string(REGEX REPLACE "\n\n+" "\n" content "${content}")
    string(APPEND text "== ${h}${content}")
  endforeach()
  string(SHA256 hash "${text}")
  set(${out_var} ${hash} PARENT_SCOPE)
endfunction()

# flowd_write_sdk_hash(INCLUDE_DIR OUTPUT_DIR): writes
# OUTPUT_DIR/flowd/sdk_hash.hpp for the headers in INCLUDE_DIR (rewritten only
# when the hash changes, so nothing rebuilds for nothing).
function(flowd_write_sdk_hash include_dir output_dir)
  flowd_sdk_hash(FLOWD_SDK_HASH ${include_dir})
  configure_file(${CMAKE_CURRENT_FUNCTION_LIST_DIR}/sdk_hash.hpp.in ${output_dir}/flowd/sdk_hash.hpp @ONLY)
  set(FLOWD_SDK_HASH ${FLOWD_SDK_HASH} PARENT_SCOPE)
endfunction()
