import Foundation
import Testing
@testable import ContinualExperiments

/// `FileKind` tells the files a user mixes up apart from their first bytes: what the wrong-kind
/// messages and the never-replace-a-foreign-file rule rest on.
@Suite("File kind")
struct FileKindTests {
    static let signature: [UInt8] = [0x89, 0x48, 0x44, 0x46, 0x0D, 0x0A, 0x1A, 0x0A]

    @Test func theHDF5SignatureAtTheStartOrAfterAUserBlockIsHDF5() {
        #expect(FileKind.classify(Self.signature + [0, 0, 0]) == .hdf5)
        #expect(FileKind.classify([UInt8](repeating: 0, count: 512) + Self.signature) == .hdf5)
        // Not at a place libhdf5 looks, or cut short: not HDF5.
        #expect(FileKind.classify([0] + Self.signature) == .binary)
        #expect(FileKind.classify(Array(Self.signature.prefix(7))) == .binary)
    }

    @Test func textIsJSONOnlyWhenItOpensAnObjectOrArray() {
        #expect(FileKind.classify(Array("{\"name\": 1}".utf8)) == .json)
        #expect(FileKind.classify(Array("\u{FEFF}\n  [1, 2]".utf8)) == .json)
        #expect(FileKind.classify(Array("my notes\n".utf8)) == .text)
        #expect(FileKind.classify(Array(Array("naï".utf8).dropLast())) == .text)    // a sample ending mid-character
        #expect(FileKind.classify([0x7B, 0x00, 0x7D]) == .binary)
        #expect(FileKind.classify([]) == .empty)
    }

    @Test func pathsAreJudgedFromTheirFirstBytes() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("FileKind-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let h5 = dir.appendingPathComponent("named.json").path   // the name does not matter
        try Data(Self.signature + [UInt8](repeating: 7, count: 5000)).write(to: URL(fileURLWithPath: h5))
        #expect(FileKind.of(h5) == .hdf5)
        #expect(FileKind.of(dir.path) == .directory)
        #expect(FileKind.of(dir.appendingPathComponent("absent").path) == .missing)
        #expect("\(FileKind.of(dir.path))" == "a directory")
    }
}
