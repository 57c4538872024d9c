// The one exception a native addon throws for an argument it cannot act on (a wrong type, a bad
// handle, a pointer outside its buffer, an index out of range). `code` is the JS error code the
// addon's boundary gives it, e.g. "ATTN_BAD_ARGUMENT". @attn/cuda's runtime and the backends'
// addons share it through this include tree.
#pragma once
#include <stdexcept>
#include <string>

namespace attn {

class InvalidArgument : public std::invalid_argument {
 public:
  explicit InvalidArgument(const std::string& what, const char* code = "ATTN_INVALID_ARGUMENT")
      : std::invalid_argument(what), code_(code) {}
  const char* code() const { return code_; }

 private:
  const char* code_;
};

}  // namespace attn
