import ContinualCore
import Foundation

/// The optional key that seals results files (`RunManifest`): an HMAC-SHA256 of the run manifest
/// under a key only its holder has, so that rewriting runs, digests and manifest together — which
/// plain SHA-256 digests cannot detect — is detected too.
///
/// The key is the content of the file named by `CONTINUALKIT_RESULTS_KEY_FILE` (at least 16
/// bytes; e.g. `head -c 32 /dev/urandom > results.key`), read once per process. With a key,
/// every writer seals the files it commits, and every reader (`inspect --verify`, `merge`,
/// `repair`, `--resume`, warm starts and exports) refuses, as damage, the runs of a file whose
/// seal is missing or does not match. Without one, nothing is sealed or checked by key.
public enum ResultsKey {
    public static let variable = "CONTINUALKIT_RESULTS_KEY_FILE"

    /// The key, or nil when none is set. An unreadable or short key file is a fatal
    /// configuration error, reported by `problem`.
    public static var key: [UInt8]? { loaded.key }

    /// Why the configured key cannot be used (missing file, fewer than 16 bytes); nil when fine or unset.
    public static var problem: String? { loaded.problem }

    /// A short public name of the key (the first 8 hex digits of its SHA-256), stored beside the
    /// seal so a reader with another key is told so.
    static func keyId(_ key: [UInt8]) -> String { String(SHA256.hex(SHA256.hash(key)).prefix(8)) }

    private static let loaded: (key: [UInt8]?, problem: String?) = load(ProcessInfo.processInfo.environment[variable])

    static func load(_ path: String?) -> (key: [UInt8]?, problem: String?) {
        guard let path, !path.isEmpty else { return (nil, nil) }
        guard let data = FileManager.default.contents(atPath: path) else {
            return (nil, "\(variable) names \(path), which cannot be read")
        }
        guard data.count >= 16 else {
            return (nil, "the key in \(path) (\(variable)) has \(data.count) bytes; at least 16 are needed (e.g. head -c 32 /dev/urandom > \(path))")
        }
        return ([UInt8](data), nil)
    }

    /// HMAC-SHA256 of `message` under the key (hex) and the key's id; nil when no key is set.
    static func seal(_ message: [UInt8]) -> (hmac: String, keyId: String)? {
        key.map { (SHA256.hex(HMAC.sha256(key: $0, message: message)), keyId($0)) }
    }

    /// Why `seal` (stored with `keyId`) does not hold for `message` under this process's key; nil
    /// when no key is set or it holds. `subject` names the sealed thing ("the file"), `sealName`
    /// its seal ("the run manifest's seal") in the messages.
    static func sealProblem(_ message: [UInt8], seal: String?, keyId: String?, subject: String, sealName: String) -> String? {
        guard let key else { return nil }
        guard let seal else { return "\(subject) is not sealed, and \(variable) sets a key (written without it, or its seal was removed)" }
        if HMAC.equal(Array(seal.utf8), Array(SHA256.hex(HMAC.sha256(key: key, message: message)).utf8)) { return nil }
        if let keyId, keyId != self.keyId(key) { return "\(subject) is sealed with another key (\(keyId)) than \(variable)'s (\(self.keyId(key)))" }
        return "\(sealName) does not match: \(subject) was edited by someone without the key"
    }
}

