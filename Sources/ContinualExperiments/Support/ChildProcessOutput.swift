import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Runs a program and returns what it wrote to standard output, with no descriptor of ours open
/// in the child but its standard input (/dev/null), output (a pipe) and error (/dev/null).
///
/// Why every other descriptor is closed: `posix_spawn` children inherit every descriptor not
/// marked close-on-exec, and libhdf5 opens results files without `O_CLOEXEC`. Its `flock` belongs
/// to the open file description, so a child that inherited a results file kept that file locked
/// after we closed it, and the next open of the file failed with "unable to lock file" (issue
/// 26). HDF5File also marks its descriptors close-on-exec, but only after `H5Fopen` returns; a
/// child spawned from another thread in between still inherited one. Closing in the child is the
/// fix at the right depth: it covers every descriptor of every library, whenever it was opened.
///
/// How: glibc ≥ 2.34's `posix_spawn_file_actions_addclosefrom_np` (closes everything from 3 up in
/// the child; it is not exported to Swift, so it is looked up with `dlsym`); where that is
/// missing, every descriptor listed in /proc/self/fd is closed one by one (glibc ignores a close
/// action whose descriptor is no longer open, so a descriptor another thread closes meanwhile is
/// harmless; one opened meanwhile is not covered, which is why the first path is preferred).
///
/// Spawned with `posix_spawnp` rather than Foundation's `Process`, which took ≈ 50 ms per launch
/// here and installs a SIGCHLD handler that interrupts other reads.
enum ChildProcessOutput {
    /// The program's standard output, or nil when it cannot be started, is killed by a signal or
    /// exits with a status other than 0.
    static func run(_ program: String, _ arguments: [String], environment: [String: String]) -> Data? {
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else { return nil }
        let (readEnd, writeEnd) = (pipeEnds[0], pipeEnds[1])
        let pid = spawn(program, arguments, environment: environment, output: writeEnd, error: nil, alsoClosing: [readEnd])
        close(writeEnd)
        guard let pid else {
            close(readEnd)
            return nil
        }
        let data = FileHandle(fileDescriptor: readEnd, closeOnDealloc: true).readAllRetryingInterrupts()
        // Exited normally with status 0.
        guard wait(pid) == 0 else { return nil }
        return data
    }

    /// Starts `program` (searched on PATH) with standard input /dev/null, standard output
    /// `output`, standard error `error` (nil: /dev/null), no other descriptor of ours, in
    /// `directory` when given (glibc ≥ 2.29); nil when it cannot be started.
    static func spawn(_ program: String, _ arguments: [String], environment: [String: String], output: Int32, error: Int32?,
                      directory: String? = nil, alsoClosing: [Int32] = []) -> pid_t? {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, output, 1)
        if let error { posix_spawn_file_actions_adddup2(&actions, error, 2) } else {
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        }
        closeInheritedDescriptors(&actions, alsoClosing: alsoClosing + [output] + (error.map { [$0] } ?? []))
        if let directory {
            guard let addChdir, addChdir(&actions, directory) == 0 else { return nil }
        }
        let argv = ([program] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for p in argv { free(p) }
            for p in envp { free(p) }
        }
        var pid: pid_t = 0
        return posix_spawnp(&pid, program, &actions, nil, argv, envp) == 0 ? pid : nil
    }

    /// Waits for child `pid`: its exit status, or 128 + the signal that killed it.
    static func wait(_ pid: pid_t) -> Int32 {
        let ended = termination(pid)
        return ended.signal.map { 128 + $0 } ?? ended.status
    }

    /// Waits for child `pid`: its exit status and nil, or 0 and the signal that killed it (for a
    /// caller that must tell `exit(130)` from death by SIGINT).
    static func termination(_ pid: pid_t) -> (status: Int32, signal: Int32?) {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        return status & 0x7f == 0 ? ((status >> 8) & 0xff, nil) : (0, status & 0x7f)
    }

    private typealias AddChdir = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32

    /// glibc's `posix_spawn_file_actions_addchdir_np`, when this libc has it.
    private static let addChdir: AddChdir? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addchdir_np") else { return nil }
        return unsafeBitCast(symbol, to: AddChdir.self)
    }()

    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32

    /// glibc's `posix_spawn_file_actions_addclosefrom_np`, when this libc has it.
    private static let addCloseFrom: AddCloseFrom? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(symbol, to: AddCloseFrom.self)
    }()

    /// Adds actions that close every descriptor from 3 up in the child (after the dup2 above).
    private static func closeInheritedDescriptors(_ actions: inout posix_spawn_file_actions_t, alsoClosing pipeEnds: [Int32]) {
        if let addCloseFrom, addCloseFrom(&actions, 3) == 0 { return }
        var open = Set(pipeEnds)
        if let names = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") {
            for name in names { if let fd = Int32(name), fd > 2 { open.insert(fd) } }
        }
        for fd in open.sorted() { posix_spawn_file_actions_addclose(&actions, fd) }
    }
}
