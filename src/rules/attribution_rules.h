// Findings from stall attribution (attribution/attribute.h): one per cause that explains some
// of the run's decode stalls, and one for the stalls no layer explains. Each says how many
// stalls the cause explains, the share of decode time they cost, two or three examples with
// their time and the evidence of each layer, and the confidence: the cause's presence in the
// stalls against its presence in windows of the same length elsewhere in the run.
// Pure functions.
#pragma once

#include <vector>

#include "attribution/attribute.h"
#include "rules/finding.h"

namespace latdoc::rules {

// No stall: no finding (load.itl_stalls says there were none).
std::vector<Finding> EvaluateAttributionRules(const attribution::Attribution& a,
                                              const attribution::Timeline& t);

// The advice load.itl_stalls gets instead of its generic one when a cause was attributed.
std::string AttributedStallsAdvice(const attribution::Attribution& a);

}  // namespace latdoc::rules
