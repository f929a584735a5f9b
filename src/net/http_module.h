// The boundary between laggard and its HTTP module, liblaggard_http.so
// (net/http.h says why there is one). Both sides are built together, by the
// same compiler against the same libstdc++, so C++ types cross it; the
// module's one exported symbol, laggard_http_module(), is C, found with
// dlsym, and carries kHttpModuleAbi so a module from another build is
// refused rather than called.

#ifndef LAGGARD_NET_HTTP_MODULE_H_
#define LAGGARD_NET_HTTP_MODULE_H_

#include <cstdint>
#include <string>

#include "net/http.h"

namespace laggard::net {

inline constexpr int kHttpModuleAbi = 1;
inline constexpr const char* kHttpModuleSymbol = "laggard_http_module";

// The server, as the module implements it (net/http_server.cc).
class HttpServerBackend {
 public:
  virtual ~HttpServerBackend() = default;
  virtual void Get(const std::string& path, HttpServer::Handler handler) = 0;
  // Binds host:port (0: any free port); the port bound, or 0 on failure.
  virtual int Bind(const std::string& host, int port) = 0;
  virtual uint64_t refused_connections() const = 0;
  virtual uint64_t timed_out_connections() const = 0;
  virtual void Start() = 0;
  virtual void Stop() = 0;
};

struct HttpModule {
  int abi = kHttpModuleAbi;
  HttpServerBackend* (*new_server)(int threads) = nullptr;  // the caller deletes it
  void (*get)(const HttpGetRequest& request, HttpGetResult* result) = nullptr;
};

}  // namespace laggard::net

extern "C" const laggard::net::HttpModule* laggard_http_module();

#endif  // LAGGARD_NET_HTTP_MODULE_H_
