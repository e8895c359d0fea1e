#include "trace/importers/common/op_work.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <string_view>

namespace latdoc::trace {
namespace {

// Sample args of a Kineto CPU op (PyTorch 2.11, record_shapes=True):
//   "Input type": ["c10::BFloat16", "c10::BFloat16"], "Input Dims": [[8, 2048], [2048, 6144]]
//   "Input type": ["float", "double", "Scalar"],      "Input Dims": [[8, 1, 1], [], []]
// A scalar argument has dims [] (and type "Scalar", "" or a wrapped number's dtype); a tensor
// list nests one level deeper, which no op here takes.
enum class Family { kNone, kMm, kAddmm, kBmm, kBaddbmm, kScaledMm, kAttnBHLD, kAttnBLHD, kArith, kCopy, kReduce, kSoftmax };

struct OpEntry {
  std::string_view name;
  Family family;
};

// Sorted by name (binary search).
constexpr std::array kOps = {
    OpEntry{"aten::_cudnn_attention_forward", Family::kAttnBHLD},
    OpEntry{"aten::_efficient_attention_forward", Family::kAttnBLHD},
    OpEntry{"aten::_flash_attention_forward", Family::kAttnBLHD},
    OpEntry{"aten::_log_softmax", Family::kSoftmax},
    OpEntry{"aten::_scaled_dot_product_cudnn_attention", Family::kAttnBHLD},
    OpEntry{"aten::_scaled_dot_product_efficient_attention", Family::kAttnBHLD},
    OpEntry{"aten::_scaled_dot_product_flash_attention", Family::kAttnBHLD},
    OpEntry{"aten::_scaled_mm", Family::kScaledMm},
    OpEntry{"aten::_softmax", Family::kSoftmax},
    OpEntry{"aten::abs", Family::kArith},
    OpEntry{"aten::add", Family::kArith},
    OpEntry{"aten::add_", Family::kArith},
    OpEntry{"aten::addmm", Family::kAddmm},
    OpEntry{"aten::amax", Family::kReduce},
    OpEntry{"aten::argmax", Family::kReduce},
    OpEntry{"aten::baddbmm", Family::kBaddbmm},
    OpEntry{"aten::bmm", Family::kBmm},
    OpEntry{"aten::copy_", Family::kCopy},
    OpEntry{"aten::cos", Family::kArith},
    OpEntry{"aten::div", Family::kArith},
    OpEntry{"aten::div_", Family::kArith},
    OpEntry{"aten::exp", Family::kArith},
    OpEntry{"aten::gelu", Family::kArith},
    OpEntry{"aten::maximum", Family::kArith},
    OpEntry{"aten::mean", Family::kReduce},
    OpEntry{"aten::minimum", Family::kArith},
    OpEntry{"aten::mm", Family::kMm},
    OpEntry{"aten::mul", Family::kArith},
    OpEntry{"aten::mul_", Family::kArith},
    OpEntry{"aten::neg", Family::kArith},
    OpEntry{"aten::pow", Family::kArith},
    OpEntry{"aten::reciprocal", Family::kArith},
    OpEntry{"aten::relu", Family::kArith},
    OpEntry{"aten::relu_", Family::kArith},
    OpEntry{"aten::rsqrt", Family::kArith},
    OpEntry{"aten::sigmoid", Family::kArith},
    OpEntry{"aten::silu", Family::kArith},
    OpEntry{"aten::silu_", Family::kArith},
    OpEntry{"aten::sin", Family::kArith},
    OpEntry{"aten::sqrt", Family::kArith},
    OpEntry{"aten::sub", Family::kArith},
    OpEntry{"aten::sub_", Family::kArith},
    OpEntry{"aten::sum", Family::kReduce},
    OpEntry{"aten::tanh", Family::kArith},
    OpEntry{"aten::where", Family::kArith},
};

Family FamilyOf(std::string_view name) {
  const auto* it = std::lower_bound(kOps.begin(), kOps.end(), name,
                                    [](const OpEntry& e, std::string_view n) { return e.name < n; });
  return it != kOps.end() && it->name == name ? it->family : Family::kNone;
}

struct Dtype {
  WorkDtype kind = WorkDtype::kUnknown;
  int bytes = 0;  // 0: not a tensor element type (a Scalar, a list, "")
};

// c10's type names as RecordFunction writes them (c10/core/ScalarType.h, toString of the C++
// type through c10::demangle).
Dtype DtypeOf(std::string_view t) {
  if (t == "c10::BFloat16") return {WorkDtype::kBf16, 2};
  if (t == "c10::Half") return {WorkDtype::kFp16, 2};
  if (t == "float") return {WorkDtype::kFp32, 4};
  if (t == "double") return {WorkDtype::kFp64, 8};
  if (t.starts_with("c10::Float8_")) return {WorkDtype::kFp8, 1};
  if (t == "long int" || t == "long" || t == "int64_t") return {WorkDtype::kInt, 8};
  if (t == "int") return {WorkDtype::kInt, 4};
  if (t == "short int" || t == "short") return {WorkDtype::kInt, 2};
  if (t == "signed char" || t == "unsigned char" || t == "bool") return {WorkDtype::kInt, 1};
  return {};
}

// An input's dimensions, without a heap allocation (the importer calls this for most CPU ops
// of a PyTorch trace): no op here takes a tensor of more than kMaxRank dimensions or more than
// kMaxInputs arguments; more fails the parse.
constexpr size_t kMaxRank = 8, kMaxInputs = 24;
struct Dims {
  std::array<int64_t, kMaxRank> v{};
  size_t n = 0;
  size_t size() const { return n; }
  bool empty() const { return n == 0; }
  int64_t operator[](size_t i) const { return v[i]; }
  const int64_t* begin() const { return v.data(); }
  const int64_t* end() const { return v.data() + n; }
  bool push_back(int64_t x) {
    if (n == kMaxRank) return false;
    v[n++] = x;
    return true;
  }
};
template <typename T>
struct Inputs {
  std::array<T, kMaxInputs> v{};
  size_t n = 0;
  size_t size() const { return n; }
  T& operator[](size_t i) { return v[i]; }
  const T& operator[](size_t i) const { return v[i]; }
  bool push_back(T x) {
    if (n == kMaxInputs) return false;
    v[n++] = std::move(x);
    return true;
  }
};

// "[[8, 2048], [], [2048, 6144]]" -> {{8, 2048}, {}, {2048, 6144}}; false on anything else
// (a tensor list's deeper nesting included).
bool ParseDims(std::string_view s, Inputs<Dims>* out) {
  size_t i = 0;
  auto ws = [&] {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r')) ++i;
  };
  ws();
  if (i >= s.size() || s[i] != '[') return false;
  ++i;
  ws();
  if (i < s.size() && s[i] == ']') return true;
  while (true) {
    ws();
    if (i >= s.size() || s[i] != '[') return false;
    ++i;
    Dims d;
    ws();
    if (i < s.size() && s[i] == ']') {
      ++i;
    } else {
      while (true) {
        ws();
        int64_t v = 0;
        size_t digits = 0;
        while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
          if (v > (int64_t{1} << 40)) return false;  // no real dimension is that large
          v = v * 10 + (s[i] - '0');
          ++i;
          ++digits;
        }
        if (digits == 0) return false;
        if (!d.push_back(v)) return false;
        ws();
        if (i < s.size() && s[i] == ',') {
          ++i;
          continue;
        }
        if (i < s.size() && s[i] == ']') {
          ++i;
          break;
        }
        return false;
      }
    }
    if (!out->push_back(d)) return false;
    ws();
    if (i < s.size() && s[i] == ',') {
      ++i;
      continue;
    }
    if (i < s.size() && s[i] == ']') return true;
    return false;
  }
}

// "[\"c10::BFloat16\", \"Scalar\", \"\"]" -> its strings; false on escapes or non-strings.
bool ParseTypes(std::string_view s, Inputs<std::string_view>* out) {
  size_t i = 0;
  auto ws = [&] {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r')) ++i;
  };
  ws();
  if (i >= s.size() || s[i] != '[') return false;
  ++i;
  ws();
  if (i < s.size() && s[i] == ']') return true;
  while (true) {
    ws();
    if (i >= s.size() || s[i] != '"') return false;
    const size_t start = ++i;
    while (i < s.size() && s[i] != '"') {
      if (s[i] == '\\') return false;
      ++i;
    }
    if (i >= s.size()) return false;
    if (!out->push_back(s.substr(start, i - start))) return false;
    ++i;
    ws();
    if (i < s.size() && s[i] == ',') {
      ++i;
      continue;
    }
    return i < s.size() && s[i] == ']';
  }
}

double Numel(const Dims& d) {
  double n = 1;
  for (int64_t v : d) n *= static_cast<double>(v);
  return n;
}

// The tensors among the inputs: dims not empty and an element type.
struct Tensor {
  const Dims* dims = nullptr;
  Dtype dtype;
};

std::optional<OpWork> Gemm(const Dims& a, const Dims& b, Dtype t, size_t batch_rank, const Dims* bias,
                           Dtype bias_t) {
  if (a.size() != batch_rank + 2 || b.size() != batch_rank + 2 || t.bytes == 0) return std::nullopt;
  double batch = 1;
  for (size_t i = 0; i < batch_rank; ++i) {
    if (a[i] != b[i]) return std::nullopt;
    batch *= static_cast<double>(a[i]);
  }
  const double m = static_cast<double>(a[batch_rank]), k = static_cast<double>(a[batch_rank + 1]);
  const double n = static_cast<double>(b[batch_rank + 1]);
  if (a[batch_rank + 1] != b[batch_rank]) return std::nullopt;
  OpWork w;
  w.kind = WorkKind::kGemm;
  w.dtype = t.kind;
  w.flops = 2 * batch * m * k * n;
  w.bytes = batch * (m * k + k * n + m * n) * t.bytes;
  if (bias != nullptr && bias_t.bytes > 0) w.bytes += Numel(*bias) * bias_t.bytes;
  return w;
}

// Scaled dot-product attention over q, k and v of rank 4: (B, H, L, D) when `bhld`, else
// (B, L, H, D); t is q's type.
std::optional<OpWork> Attention(bool bhld, const Dims& q, const Dims& k, const Dims& v, Dtype t) {
  if (q.size() != 4 || k.size() != 4 || v.size() != 4 || t.bytes == 0) return std::nullopt;
  const double b = static_cast<double>(q[0]);
  const double h = static_cast<double>(bhld ? q[1] : q[2]);
  const double lq = static_cast<double>(bhld ? q[2] : q[1]);
  const double lk = static_cast<double>(bhld ? k[2] : k[1]);
  const double d = static_cast<double>(q[3]), dv = static_cast<double>(v[3]);
  if (k[3] != q[3] || k[0] != q[0] || v[0] != q[0]) return std::nullopt;
  OpWork w;
  w.kind = WorkKind::kAttention;
  w.dtype = t.kind;
  w.flops = 2 * b * h * lq * lk * (d + dv);
  w.bytes = (Numel(q) + Numel(k) + Numel(v) + b * h * lq * dv) * t.bytes;
  return w;
}

// The elementwise families (arithmetic, copy, reduction, softmax) over the tensors recorded
// with a shape and a known type (at least one).
std::optional<OpWork> Elementwise(Family family, std::string_view op_name,
                                  const Inputs<Tensor>& tensors) {
  OpWork w;
  w.kind = WorkKind::kElementwise;
  w.dtype = tensors[0].dtype.kind;
  double read = 0;
  for (size_t i = 0; i < tensors.size(); ++i)
    read += Numel(*tensors[i].dims) * tensors[i].dtype.bytes;
  if (family == Family::kCopy) {
    // copy_(self, src): reads src, writes self; both are recorded.
    w.bytes = read;
    w.flops = 0;
    return w;
  }
  if (family == Family::kReduce) {
    // The output (one value per reduced row) is small beside the input: not counted.
    w.bytes = read;
    w.flops = Numel(*tensors[0].dims);
    return w;
  }
  if (family == Family::kSoftmax) {
    w.bytes = 2 * Numel(*tensors[0].dims) * tensors[0].dtype.bytes;
    w.flops = 5 * Numel(*tensors[0].dims);  // max, subtract, exp, sum, divide
    return w;
  }
  // The output has the broadcast shape of the inputs (right-aligned), in the first
  // tensor's type; an in-place op (name ending in '_') writes its first input.
  double out_numel = 1;
  if (op_name.ends_with("_")) {
    out_numel = Numel(*tensors[0].dims);
  } else {
    size_t rank = 0;
    for (size_t i = 0; i < tensors.size(); ++i) rank = std::max(rank, tensors[i].dims->size());
    for (size_t j = 0; j < rank; ++j) {
      int64_t size = 1;
      for (size_t i = 0; i < tensors.size(); ++i) {
        const Dims& d = *tensors[i].dims;
        if (j + d.size() < rank) continue;
        const int64_t v = d[j + d.size() - rank];
        if (v != 1) size = v;
      }
      out_numel *= static_cast<double>(size);
    }
  }
  w.bytes = read + out_numel * tensors[0].dtype.bytes;
  w.flops = out_numel;
  return w;
}

}  // namespace

bool WantsShapes(std::string_view op_name) {
  return op_name.starts_with("aten::") && FamilyOf(op_name) != Family::kNone;
}

std::optional<OpWork> EstimateOpWork(std::string_view op_name, std::string_view input_dims_json,
                                     std::string_view input_types_json) {
  const Family family = FamilyOf(op_name);
  if (family == Family::kNone) return std::nullopt;
  Inputs<Dims> dims;
  Inputs<std::string_view> types;
  if (!ParseDims(input_dims_json, &dims) || !ParseTypes(input_types_json, &types)) return std::nullopt;
  if (dims.size() != types.size()) return std::nullopt;
  auto dtype = [&](size_t i) { return i < types.size() ? DtypeOf(types[i]) : Dtype{}; };
  switch (family) {
    case Family::kMm:
      if (dims.size() < 2) return std::nullopt;
      return Gemm(dims[0], dims[1], dtype(0), 0, nullptr, {});
    case Family::kScaledMm: {
      if (dims.size() < 2) return std::nullopt;
      auto w = Gemm(dims[0], dims[1], dtype(0), 0, nullptr, {});
      // The fp8 inputs are one byte each; the output (bf16 most often) is not recorded.
      if (w) w->dtype = WorkDtype::kFp8;
      return w;
    }
    case Family::kAddmm:
      if (dims.size() < 3) return std::nullopt;
      return Gemm(dims[1], dims[2], dtype(1), 0, &dims[0], dtype(0));
    case Family::kBmm:
      if (dims.size() < 2) return std::nullopt;
      return Gemm(dims[0], dims[1], dtype(0), 1, nullptr, {});
    case Family::kBaddbmm:
      if (dims.size() < 3) return std::nullopt;
      return Gemm(dims[1], dims[2], dtype(1), 1, &dims[0], dtype(0));
    case Family::kAttnBHLD:
    case Family::kAttnBLHD: {
      if (dims.size() < 3) return std::nullopt;
      return Attention(family == Family::kAttnBHLD, dims[0], dims[1], dims[2], dtype(0));
    }
    case Family::kArith:
    case Family::kCopy:
    case Family::kReduce:
    case Family::kSoftmax: {
      Inputs<Tensor> tensors;
      for (size_t i = 0; i < dims.size(); ++i) {
        const Dtype t = dtype(i);
        if (!dims[i].empty() && t.bytes > 0) tensors.push_back({&dims[i], t});
      }
      if (tensors.size() == 0) return std::nullopt;
      return Elementwise(family, op_name, tensors);
    }
    case Family::kNone:
      break;
  }
  return std::nullopt;
}

}  // namespace latdoc::trace
