// The XLA FFI kernels of tests/test_ffi.py (also built by benchmarks/bench_export.py).
#include <cmath>
#include <cstdint>
#include <string_view>
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

// y = x / sqrt(mean(x**2 over the last axis) + eps), row by row.
static ffi::Error RmsNormImpl(float eps, ffi::Buffer<ffi::F32> x,
                              ffi::ResultBuffer<ffi::F32> y) {
  auto dims = x.dimensions();
  if (dims.size() == 0) return ffi::Error::InvalidArgument("rms_norm: x must have rank >= 1");
  int64_t n = dims.back();
  int64_t rows = n == 0 ? 0 : x.element_count() / n;
  const float* in = x.typed_data();
  float* out = y->typed_data();
  for (int64_t r = 0; r < rows; ++r) {
    float ss = 0.f;
    for (int64_t i = 0; i < n; ++i) ss += in[r * n + i] * in[r * n + i];
    float scale = 1.f / std::sqrt(ss / n + eps);
    for (int64_t i = 0; i < n; ++i) out[r * n + i] = in[r * n + i] * scale;
  }
  return ffi::Error::Success();
}
XLA_FFI_DEFINE_HANDLER_SYMBOL(RmsNorm, RmsNormImpl,
                              ffi::Ffi::Bind().Attr<float>("eps").Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());

// out = x + y, for x and y of the same size (else an error).
static ffi::Error AddImpl(ffi::Buffer<ffi::F32> x, ffi::Buffer<ffi::F32> y,
                          ffi::ResultBuffer<ffi::F32> out) {
  if (x.element_count() != y.element_count())
    return ffi::Error::InvalidArgument("add: x and y differ in size");
  for (size_t i = 0; i < x.element_count(); ++i)
    out->typed_data()[i] = x.typed_data()[i] + y.typed_data()[i];
  return ffi::Error::Success();
}
XLA_FFI_DEFINE_HANDLER_SYMBOL(Add, AddImpl,
                              ffi::Ffi::Bind().Arg<ffi::Buffer<ffi::F32>>()
                                  .Arg<ffi::Buffer<ffi::F32>>().Ret<ffi::Buffer<ffi::F32>>());

// out = sign * (x * weights[i % len] * factor + offset), sign -1 for mode "neg"; count = the
// number of elements.
static ffi::Error AffineImpl(int64_t offset, double factor, std::string_view mode,
                             ffi::Span<const float> weights, ffi::Buffer<ffi::F32> x,
                             ffi::ResultBuffer<ffi::F32> out,
                             ffi::ResultBuffer<ffi::S32> count) {
  if (weights.size() == 0) return ffi::Error::InvalidArgument("affine: empty weights");
  float sign = mode == "neg" ? -1.f : 1.f;
  for (size_t i = 0; i < x.element_count(); ++i)
    out->typed_data()[i] =
        sign * (x.typed_data()[i] * weights[i % weights.size()] * float(factor) + float(offset));
  count->typed_data()[0] = static_cast<int32_t>(x.element_count());
  return ffi::Error::Success();
}
XLA_FFI_DEFINE_HANDLER_SYMBOL(Affine, AffineImpl,
                              ffi::Ffi::Bind()
                                  .Attr<int64_t>("offset")
                                  .Attr<double>("factor")
                                  .Attr<std::string_view>("mode")
                                  .Attr<ffi::Span<const float>>("weights")
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::S32>>());

// out = x + 1 (run with out aliased to x: in place).
static ffi::Error IncrementImpl(ffi::Buffer<ffi::F32> x, ffi::ResultBuffer<ffi::F32> out) {
  for (size_t i = 0; i < x.element_count(); ++i) out->typed_data()[i] = x.typed_data()[i] + 1.f;
  return ffi::Error::Success();
}
XLA_FFI_DEFINE_HANDLER_SYMBOL(Increment, IncrementImpl,
                              ffi::Ffi::Bind().Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>());

// A user type: XLA assigns its id when it is registered.
extern "C" {
XLA_FFI_TypeId MjStateTypeId = XLA_FFI_UNKNOWN_TYPE_ID;
static void DeleteMjState(void*) {}
XLA_FFI_TypeInfo MjStateTypeInfo = {XLA_FFI_TypeInfo_STRUCT_SIZE, nullptr, DeleteMjState};
}
