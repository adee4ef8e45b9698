#pragma once
// flowd's ZeroMQ CURVE security layer (issue 5), in one include: keys and
// their files (keys.hpp), the endpoint policy (policy.hpp), the ZAP handler
// and socket helpers (zap.hpp). docs/security.md explains the whole.
#include "net/security/keys.hpp"
#include "net/security/policy.hpp"
#include "net/security/zap.hpp"
