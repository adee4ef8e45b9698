# FLOWD_WITH_CUDA: AUTO enables CUDA when a CUDA compiler is found, ON
# requires it, OFF never looks. flowd itself always runs without a GPU; this
# only decides whether GPU variants are compiled.
set(FLOWD_HAVE_CUDA OFF)
if(NOT FLOWD_WITH_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      # Turing to Hopper (CUDA 13 has no sm_70); sm_90 is the H100/H200 we test on.
      set(CMAKE_CUDA_ARCHITECTURES 75 80 86 90)
    endif()
    enable_language(CUDA)
    # C++17 for .cu files: CMake 3.25 (Debian 12) knows no C++20 flag for
    # nvcc and refuses to generate a CUDA20 target. The .cu files are
    # kernels behind plain C++ headers and need nothing newer.
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    set(FLOWD_HAVE_CUDA ON)
  elseif(FLOWD_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "FLOWD_WITH_CUDA=ON but no CUDA compiler was found (set CMAKE_CUDA_COMPILER)")
  endif()
endif()
message(STATUS "flowd: CUDA variants ${FLOWD_HAVE_CUDA}")
