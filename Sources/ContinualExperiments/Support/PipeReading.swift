import Foundation
#if canImport(Glibc)
import Glibc
#endif

extension FileHandle {
    /// Everything until end of file, retrying reads that a signal interrupted (EINTR).
    ///
    /// Foundation's `readDataToEndOfFile()` on Linux ends in a `try!` that traps on EINTR, and
    /// `Process` installs a SIGCHLD handler: a process that reads one child's pipe while another
    /// child exits can then crash. This reads the descriptor directly instead.
    public func readAllRetryingInterrupts() -> Data {
        var result = Data()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fileDescriptor, $0.baseAddress, $0.count) }
            if n > 0 {
                result.append(contentsOf: buffer[0..<n])
            } else if n == 0 || errno != EINTR {
                return result
            }
        }
    }

    /// The bytes available now (at least one unless at end of file), retrying on EINTR; empty at
    /// end of file.
    public func readSomeRetryingInterrupts() -> Data {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fileDescriptor, $0.baseAddress, $0.count) }
            if n > 0 { return Data(buffer[0..<n]) }
            if n == 0 || errno != EINTR { return Data() }
        }
    }
}
