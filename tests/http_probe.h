// Minimal HTTP/1.1 GET over raw loopback sockets, for the agent tests and
// bench/agent_bench.cc: one request, and many concurrent ones multiplexed
// with poll() on one thread (so "1,000 concurrent scrapes" really holds
// 1,000 connections open at once, without 1,000 client threads); and slow
// clients that send half a request head and stop.

#ifndef LAGGARD_TESTS_HTTP_PROBE_H_
#define LAGGARD_TESTS_HTTP_PROBE_H_

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

namespace laggard::probe {

struct HttpResult {
  int status = 0;  // 0: no valid response
  std::string headers, body;
  std::string error;
};

// Splits a complete response (read until EOF) into status, headers, body;
// checks Content-Length when present.
inline HttpResult ParseResponse(const std::string& raw) {
  HttpResult r;
  size_t sp = raw.find(' ');
  size_t end = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/1.", 0) != 0 || sp == std::string::npos || end == std::string::npos) {
    r.error = raw.empty() ? "empty response" : "malformed response";
    return r;
  }
  r.headers = raw.substr(0, end);
  r.body = raw.substr(end + 4);
  size_t cl = r.headers.find("Content-Length: ");
  if (cl != std::string::npos) {
    size_t want = std::strtoull(r.headers.c_str() + cl + 16, nullptr, 10);
    if (want != r.body.size()) {
      r.error = "body shorter than Content-Length";
      return r;
    }
  }
  r.status = std::atoi(raw.c_str() + sp + 1);
  return r;
}

// A connection to 127.0.0.1:`port`, from `source` when given (any 127/8
// address is loopback on Linux); -1 when the socket, bind or connect fails,
// errno then says why.
inline int ConnectLoopback(int port, bool nonblocking, const char* source = nullptr) {
  sockaddr_in from{};
  from.sin_family = AF_INET;
  if (source != nullptr && inet_pton(AF_INET, source, &from.sin_addr) != 1) {
    errno = EINVAL;
    return -1;
  }
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (nonblocking ? SOCK_NONBLOCK : 0), 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if ((source != nullptr && bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0) ||
      (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 && errno != EINPROGRESS)) {
    int err = errno;
    close(fd);
    errno = err;
    return -1;
  }
  return fd;
}

// A connection from `source` (any 127/8 address is loopback on Linux) that
// sends part of a request head (`GET /metrics HTTP/1.1\r\nHost: ...\r\n`)
// and then nothing: a client too slow to finish its request. -1 as
// ConnectLoopback().
inline int SlowClient(int port, const char* source) {
  int fd = ConnectLoopback(port, false, source);
  if (fd < 0) return -1;
  const std::string part = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  send(fd, part.data(), part.size(), MSG_NOSIGNAL);
  return fd;
}

// `extra` is added to the headers, e.g. "Accept-Encoding: gzip\r\n" as
// Prometheus sends it.
inline std::string Request(const std::string& path, const std::string& extra = "") {
  return "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" + extra + "\r\n";
}

inline HttpResult Get(int port, const std::string& path, int timeout_ms = 5000,
                      const std::string& extra_headers = "") {
  HttpResult r;
  int fd = ConnectLoopback(port, false);
  if (fd < 0) {
    r.error = "connect failed";
    return r;
  }
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string req = Request(path, extra_headers);
  if (send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
    close(fd);
    r.error = "send failed";
    return r;
  }
  std::string raw;
  char buf[16384];
  while (true) {
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    raw.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return ParseResponse(raw);
}

struct ConcurrentResult {
  int ok = 0;  // status 200 and the body contains `marker`
  int failed = 0;
  double seconds = 0;
  double max_latency_s = 0;
  std::string first_error;
};

// Opens `n` connections at once, sends a GET on each as soon as it is
// connected, and reads every response to EOF.
inline ConcurrentResult GetConcurrently(int port, const std::string& path, int n,
                                        const std::string& marker, int timeout_ms = 30000) {
  using Clock = std::chrono::steady_clock;
  struct Conn {
    int fd = -1;
    bool sent = false, done = false;
    std::string raw;
  };
  ConcurrentResult res;
  auto t0 = Clock::now();
  std::vector<Conn> conns(static_cast<size_t>(n));
  int open = 0;
  for (Conn& c : conns) {
    c.fd = ConnectLoopback(port, true);
    if (c.fd < 0) {
      c.done = true;
      ++res.failed;
      if (res.first_error.empty())
        res.first_error = "connect failed: errno " + std::to_string(errno);
    } else {
      ++open;
    }
  }
  const std::string req = Request(path);
  std::vector<pollfd> fds;
  std::vector<size_t> idx;
  char buf[16384];
  while (open > 0) {
    double elapsed_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (elapsed_ms > timeout_ms) break;
    fds.clear();
    idx.clear();
    for (size_t i = 0; i < conns.size(); ++i) {
      if (conns[i].done) continue;
      fds.push_back(pollfd{conns[i].fd, static_cast<short>(conns[i].sent ? POLLIN : POLLOUT), 0});
      idx.push_back(i);
    }
    if (poll(fds.data(), fds.size(), 100) < 0) break;
    for (size_t k = 0; k < fds.size(); ++k) {
      Conn& c = conns[idx[k]];
      if (fds[k].revents == 0) continue;
      auto finish = [&] {
        close(c.fd);
        c.done = true;
        --open;
        HttpResult r = ParseResponse(c.raw);
        double lat = std::chrono::duration<double>(Clock::now() - t0).count();
        if (lat > res.max_latency_s) res.max_latency_s = lat;
        if (r.status == 200 && r.body.find(marker) != std::string::npos) {
          ++res.ok;
        } else {
          ++res.failed;
          if (res.first_error.empty()) {
            res.first_error = r.error.empty() ? "status " + std::to_string(r.status) : r.error;
          }
        }
      };
      if (!c.sent) {
        if ((fds[k].revents & (POLLERR | POLLHUP)) != 0) {
          finish();
          continue;
        }
        if (send(c.fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
          finish();
          continue;
        }
        c.sent = true;
        continue;
      }
      ssize_t got = recv(c.fd, buf, sizeof buf, 0);
      if (got > 0) {
        c.raw.append(buf, static_cast<size_t>(got));
      } else if (got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
        finish();
      }
    }
  }
  for (Conn& c : conns) {
    if (c.done) continue;
    close(c.fd);
    ++res.failed;
    if (res.first_error.empty()) res.first_error = "timed out";
  }
  res.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return res;
}

}  // namespace laggard::probe

#endif  // LAGGARD_TESTS_HTTP_PROBE_H_
