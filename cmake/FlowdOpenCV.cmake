# Debian ships OpenCVConfig.cmake only in the libopencv-dev metapackage, which
# pulls in VTK, Qt and every contrib module. We need core, imgproc and
# imgcodecs, so we accept either a full OpenCV package or the three component
# -dev packages found by hand.
find_package(OpenCV 4 QUIET COMPONENTS core imgproc imgcodecs)
if(OpenCV_FOUND)
  add_library(flowd_opencv INTERFACE)
  target_link_libraries(flowd_opencv INTERFACE opencv_core opencv_imgproc opencv_imgcodecs)
else()
  find_path(FLOWD_OPENCV_INCLUDE opencv2/core.hpp PATH_SUFFIXES opencv4 REQUIRED)
  foreach(part core imgproc imgcodecs)
    find_library(FLOWD_OPENCV_${part} opencv_${part} REQUIRED)
  endforeach()
  add_library(flowd_opencv INTERFACE)
  target_include_directories(flowd_opencv SYSTEM INTERFACE ${FLOWD_OPENCV_INCLUDE})
  target_link_libraries(flowd_opencv INTERFACE ${FLOWD_OPENCV_core} ${FLOWD_OPENCV_imgproc} ${FLOWD_OPENCV_imgcodecs})
endif()
