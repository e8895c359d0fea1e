// The work a framework op must do, from the input shapes and types the PyTorch profiler records
// with record_shapes=True: FLOPs and the least bytes moved, for a roofline of its kernels.
//
// Covers the ops that launch the kernels of an LLM step: GEMMs (aten::mm, addmm, bmm, baddbmm,
// _scaled_mm), fused attention (aten::_scaled_dot_product_{flash,efficient,cudnn}_attention,
// _cudnn_attention_forward, _flash_attention_forward, _efficient_attention_forward) and the
// common elementwise, copy and reduction ops. Ops that only dispatch to others (aten::linear,
// aten::matmul, aten::scaled_dot_product_attention) are left out: a kernel carries the id of the
// innermost op recorded around its launch, which is the op that did the work.
//
// Counting rules (what a GPU engineer would write on a whiteboard; docs/trace-roofline.md):
//   GEMM [M,K]x[K,N]: 2*M*K*N FLOPs; bytes = (M*K + K*N + M*N) elements (+ the bias of addmm).
//   attention q [B,H,Lq,D], k/v [B,Hk,Lk,D]: 4*B*H*Lq*Lk*D FLOPs (QK^T and PV, no causal
//     discount); bytes = q + k + v + output.
//   elementwise: 1 FLOP per output element (0 for copies and fills); bytes = every tensor input
//     read once + the output written once (broadcast inputs at their own size).
// Pure functions, no state; thread-safe.
#pragma once

#include <optional>
#include <string_view>

#include "trace/model/trace.h"

namespace latdoc::trace {

// True for the op names whose args the importer reads (cheap: called for every CPU op).
bool WantsShapes(std::string_view op_name);

// The work of `op_name` from its "Input Dims" and "Input type" args, each the raw JSON text of
// the array ("[[8, 2048], [2048, 6144]]", "[\"c10::BFloat16\", \"float\"]"). nullopt when the
// op is not covered, the args do not parse, or the shapes do not fit the op (a GEMM whose inner
// dimensions differ). The result's external_id, op and source are left for the caller.
std::optional<OpWork> EstimateOpWork(std::string_view op_name, std::string_view input_dims_json,
                                     std::string_view input_types_json);

}  // namespace latdoc::trace
