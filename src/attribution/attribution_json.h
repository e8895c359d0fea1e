// The "attribution" section of diagnose's document (docs/attribution.md): the clock, the
// thresholds, each stall with its causes and evidence. Output only; nothing reads it back.
#pragma once

#include <nlohmann/json.hpp>

#include "attribution/attribute.h"

namespace latdoc::attribution {

nlohmann::ordered_json AttributionJson(const Attribution& a, const Timeline& t, const Thresholds& th);

}  // namespace latdoc::attribution
