#include "core/request/request_gpus.hpp"

#include "core/text.hpp"

namespace gpufrac {

Result<std::uint32_t> parse_gpus(std::string_view key, std::string_view value) {
  auto v = text::parse_u64(value);
  if (!v || value.size() > 4 || (value[0] == '0' && value.size() > 1))
    return user_error(text::cat(key, ": ", text::quote(value), " is not a number of GPUs; use ", kGpusForm));
  if (*v < 1 || *v > kMaxGpusPerRequest)
    return user_error(text::cat(key, ": ", text::quote(value), " is out of range; use ", kGpusForm));
  return static_cast<std::uint32_t>(*v);
}

Result<std::vector<GpuPin>> parse_gpu_list(std::string_view key, std::string_view value) {
  std::vector<GpuPin> pins;
  for (const auto& item : text::split(value, ',')) {
    auto pin = parse_gpu_pin(key, item);
    if (!pin) return std::unexpected(pin.error());
    for (const auto& p : pins)
      if (p == *pin)
        return user_error(
            text::cat(key, ": ", text::quote(value), " names GPU ", pin->describe(), " twice; name each GPU once"));
    pins.push_back(std::move(*pin));
  }
  return pins;
}

Result<> apply_gpu_pins(Request& r, std::vector<GpuPin> pins, std::string_view key, std::string_view value,
                        std::string_view gpus_key) {
  const std::uint32_t wanted = r.gpu_count();
  if (pins.size() != wanted) {
    if (!r.gpus)
      return user_error(text::cat(key, ": ", text::quote(value), " names ", pins.size(), " GPUs; add ", gpus_key, ": ",
                                  pins.size(), " to book them together"));
    return user_error(text::cat(key, ": ", text::quote(value), " names ", pins.size(),
                                pins.size() == 1 ? " GPU and " : " GPUs and ", gpus_key, " asks for ", wanted,
                                "; name exactly as many GPUs, comma-separated, e.g. ",
                                wanted == 1 ? std::string("0") : text::cat("0,1", wanted > 2 ? ",..." : "")));
  }
  if (pins.size() == 1)
    r.gpu = std::move(pins.front());
  else
    r.gpu_list = std::move(pins);
  return {};
}

}  // namespace gpufrac
