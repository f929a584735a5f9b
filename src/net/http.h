// HTTP for laggard: the /metrics server of `agent` and `watch --listen`,
// and the client that reads Prometheus (`watch`, `diagnose --prometheus`).
//
// cpp-httplib (and OpenSSL and brotli with it: six libraries, ~9 ms of
// every start on a 2-core VM) lives in a module, liblaggard_http.so
// (net/http_module.h), which the first HttpServer or HttpGet opens with
// dlopen (HttpModulePaths()). Other commands never load it. Without the
// module, Listen() and HttpGet() fail with a message that names the paths
// tried.
//
// The server serves GET handlers on cpp-httplib's server
// (net/http_server.cc; with net/http_client.cc the only files that include
// httplib.h).
//
// Slow clients cannot starve it. cpp-httplib 0.11.4 (Debian 12) bounds each
// read, not a request, so a client that sends a partial head held one of a
// fixed pool of workers for seconds: 8 such clients made a scrape wait
// 2.7 s, 200 made every scrape time out. Here a connection waits for its
// whole request head (kHeadTimeoutMs, read with MSG_PEEK, nothing parsed
// yet) on a thread of its own, from a pool of `threads` +
// kMaxWaitingThreads that grows on demand and shrinks when idle; one client
// address may have at most kMaxWaitingPerClient connections still waiting
// after kHeadGraceMs, and further ones are closed at once. A request whose head has arrived is
// served at once, so /metrics answers while slow clients wait out their
// timeout. Keep-alive connections wait for their next head as long.
//
// The listen backlog is raised from httplib's 5 to SOMAXCONN so a burst of
// 1,000 connections is queued by the kernel rather than refused or retried.
//
// Thread-safety: handlers run on connection threads concurrently;
// Start()/Stop() from one controlling thread; the counters from any.

#ifndef LAGGARD_NET_HTTP_H_
#define LAGGARD_NET_HTTP_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"

namespace laggard::net {

class HttpServerBackend;

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

class HttpServer {
 public:
  using Handler = std::function<HttpResponse()>;

  static constexpr int kHeadTimeoutMs = 1000;        // the request head must arrive by then
  static constexpr int kHeadGraceMs = 100;           // a head later than this counts as slow
  static constexpr int kIoTimeoutMs = 5000;          // each read or write of a request served
  static constexpr int kMaxWaitingPerClient = 32;    // connections of one address awaiting a head
  static constexpr size_t kMaxWaitingThreads = 512;  // threads beyond `threads` for waiting heads
  static constexpr size_t kMaxHeadBytes = 8192;      // a longer head is refused
  static constexpr size_t kKeepAliveRequests = 100;

  // Opens the module (once per process); a failure is Listen()'s error.
  explicit HttpServer(int threads);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Registers a GET handler for an exact path; before Listen().
  void Get(const std::string& path, Handler handler);
  // Binds "HOST:PORT" (port 0: any free port). Fails as a whole when the
  // address is malformed or cannot be bound, or the module cannot load.
  Status Listen(const std::string& host_port);
  int port() const { return port_; }
  // Connections closed over kMaxWaitingPerClient, and closed because their
  // head did not arrive within kHeadTimeoutMs (or was over kMaxHeadBytes).
  uint64_t refused_connections() const;
  uint64_t timed_out_connections() const;
  // Serves on a background thread until Stop().
  void Start();
  void Stop();

 private:
  Status loaded_;
  std::unique_ptr<HttpServerBackend> backend_;
  int port_ = 0;
};

// One GET of `path` with `params` (URL-encoded) from the server at `url`
// ("http://host:port"), each of connect and read bounded by `timeout_s`.
struct HttpGetRequest {
  std::string url;
  std::string path;
  std::vector<std::pair<std::string, std::string>> params;
  int timeout_s = 10;
};
struct HttpGetResult {
  bool answered = false;  // false: `error` says why no answer came
  std::string error;
  int status = 0;
  std::string body;
};
// An error only when the module cannot load.
StatusOr<HttpGetResult> HttpGet(const HttpGetRequest& request);

// Where the module is looked for, in order: $LAGGARD_HTTP_MODULE alone when
// set; else <the executable's folder>/../lib/laggard/liblaggard_http.so (the
// build's lib/laggard/, the package's /usr/lib/laggard/, any prefix's
// lib/laggard/ beside its bin/; /proc/self/exe, so symlinks resolve), then
// the path `cmake --install` gives it (CMAKE_INSTALL_PREFIX/lib/laggard/).
std::vector<std::string> HttpModulePaths();

// Opens the module once per process; its error, as Listen() and HttpGet()
// return it. For commands that should stop at once without it.
Status OpenHttpModule();

}  // namespace laggard::net

#endif  // LAGGARD_NET_HTTP_H_
