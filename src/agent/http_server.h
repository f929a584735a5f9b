// The agent's HTTP endpoint: a thin wrapper over cpp-httplib's server (the
// only file that includes httplib.h) serving GET handlers.
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

#ifndef LAGGARD_AGENT_HTTP_SERVER_H_
#define LAGGARD_AGENT_HTTP_SERVER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "base/status.h"

namespace laggard::agent {

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

  explicit HttpServer(int threads);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Registers a GET handler for an exact path; before Listen().
  void Get(const std::string& path, Handler handler);
  // Binds "HOST:PORT" (port 0: any free port). Fails as a whole when the
  // address is malformed or cannot be bound.
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
  class Server;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
  std::thread thread_;
};

}  // namespace laggard::agent

#endif  // LAGGARD_AGENT_HTTP_SERVER_H_
