#pragma once
// Everything a plugin needs.
#include "flowd/array.hpp"
#include "flowd/error.hpp"
#include "flowd/gpu.hpp"
#include "flowd/item.hpp"
#include "flowd/keys.hpp"
#include "flowd/operator.hpp"
#include "flowd/param.hpp"
#include "flowd/plugin.hpp"
#include "flowd/port.hpp"
#include "flowd/table.hpp"
