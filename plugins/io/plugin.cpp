// The io plugin: image, tile and HDF5 sources and sinks (docs/plugins/io.md).
#include "flowd/plugin.hpp"
#include "list_files.hpp"
#include "read_hdf5.hpp"
#include "read_images.hpp"
#include "read_tiles.hpp"
#include "write_hdf5.hpp"
#include "write_image.hpp"
#include "write_mosaic.hpp"
#include "write_pairs.hpp"
#include "write_view.hpp"

FLOWD_PLUGIN("io", "0.1.0", "Image, tile and HDF5 input/output", flowd::io::ReadImages, flowd::io::ReadTiles,
             flowd::io::WriteImage, flowd::io::WriteMosaic, flowd::io::WriteHdf5, flowd::io::ReadHdf5,
             flowd::io::ListFiles, flowd::io::WritePairs, flowd::io::WriteView)
