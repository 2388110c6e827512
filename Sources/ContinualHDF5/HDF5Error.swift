import CHDF5
import Foundation

/// A failed HDF5 operation, with a message naming the operation, the file and the object.
/// HDF5's own error stack is never printed; its innermost (most specific) message becomes the reason.
public struct HDF5Error: Error, CustomStringConvertible, Equatable, Sendable {
    /// Broad category, so callers can react (e.g. retry a locked file) without parsing text.
    public enum Kind: Sendable, Equatable {
        case fileNotFound, notAnHDF5File, fileLocked, fileClosed
        case notFound, alreadyExists, typeMismatch, invalidArgument, library
    }

    /// What went wrong, broadly.
    public let kind: Kind
    /// The full human-readable message, e.g. "no dataset 'runs/a/loss' in results/x.h5".
    public let message: String

    /// Creates an error with an explicit kind and message.
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}

extension HDF5Error {
    /// "cannot <verb> <target>: <reason>", taking the reason from HDF5's error stack when none is given.
    static func cannot(_ verb: String, _ target: String, kind: Kind? = nil, reason: String? = nil) -> HDF5Error {
        let osError = errno
        let stack = reason == nil ? HDF5ErrorStack.messages() : []
        // HDF5's stack often says nothing useful for a failed write: name the operating-system cause.
        var detail = reason ?? stack.last(where: { !$0.isEmpty })
            ?? ([ENOSPC, EDQUOT, EIO, EFBIG, EROFS].contains(osError) ? String(cString: strerror(osError)) : "unknown HDF5 error")
        // Causes HDF5 words obscurely (or deep in the stack), said plainly.
        let all = stack.joined(separator: " | ").lowercased()
        var plain = false
        if all.contains("truncated file") {
            plain = true
            detail = "the file is truncated (shorter than its header says: cut short by a crash or an incomplete copy); HDF5: \(detail)"
        } else if all.contains("too many links") || all.contains("link traversal") && all.contains("soft") {
            plain = true
            detail = "a soft-link loop (a link that leads back to itself); HDF5: \(detail)"
        } else if all.contains("external") {
            plain = true
            detail = "an external link to another file (results files contain none: not followed); HDF5: \(detail)"
        } else if reason == nil, [ENOSPC, EDQUOT].contains(osError) {
            // The disk is full: that is the cause; libhdf5's write record ("bytes actually
            // written = 18446744073709551615") is noise to a user.
            plain = true
            detail = String(cString: strerror(osError))
        }
        let inferred: Kind
        if let kind {
            inferred = kind
        } else if all.contains("unable to lock") || all.contains("file locking") || all.contains("lock file") {
            inferred = .fileLocked
        } else if detail.contains("already exists") {
            inferred = .alreadyExists
        } else {
            inferred = .library
        }
        var text = reason == nil && !plain ? "HDF5: \(detail)" : detail
        if inferred == .fileLocked, reason == nil {
            text = "the file is in use by another process (\(text))"
        }
        return HDF5Error(inferred, "cannot \(verb) \(target): \(text)")
    }
}

/// Reads the calling thread's HDF5 error stack right after a failed call.
/// HDF5 pushes one record per internal function; the deepest one usually names the real cause.
enum HDF5ErrorStack {
    static func innermostMessage() -> String? {
        messages().last(where: { !$0.isEmpty })
    }

    /// Every message on the stack, outermost first (the stack is cleared).
    static func messages() -> [String] {
        var messages: [String] = []
        let status = withUnsafeMutablePointer(to: &messages) { pointer in
            H5Ewalk2(chdf5_H5E_DEFAULT(), H5E_WALK_DOWNWARD, { _, record, context in
                if let record, let description = record.pointee.desc {
                    context?.assumingMemoryBound(to: [String].self).pointee.append(String(cString: description))
                }
                return 0
            }, pointer)
        }
        H5Eclear2(chdf5_H5E_DEFAULT())
        guard status >= 0 else { return [] }
        return messages
    }
}

/// Returns `id`, or throws `error()` if HDF5 signalled failure with a negative identifier.
@discardableResult
func check(_ id: hid_t, _ error: @autoclosure () -> HDF5Error) throws -> hid_t {
    guard id >= 0 else { throw error() }
    return id
}

/// Throws `error()` if HDF5 signalled failure with a negative status.
func check(_ status: herr_t, _ error: @autoclosure () -> HDF5Error) throws {
    guard status >= 0 else { throw error() }
}
