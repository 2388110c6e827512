import Foundation
import Testing

/// The targets an app links (ContinualCore, ContinualStrategies, ContinualScenarios, ContinualFederated,
/// ContinualMetrics, and the on-device runtime ContinualOnDevice) import nothing but each other and, in `MathShims.swift` only, the platform's
/// C library for the elementary functions (Glibc, Musl, Darwin, Android). No Foundation, no
/// HDF5, no Dispatch: the very code researchers evaluate can ship inside an iOS or Android app.
/// ContinualCore also imports `CContinualKernels`, the package's own C kernels (portable C with
/// clang vector extensions, POSIX threads where the platform has them).
@Suite struct PortabilityTests {
    static let portable = ["ContinualCore", "ContinualStrategies", "ContinualScenarios", "ContinualMetrics", "ContinualFederated",
                           "ContinualOnDevice", "ContinualHabitEvents"]
    static let mathShim = "ContinualCore/MathShims.swift"
    static let platformC: Set<String> = ["Glibc", "Musl", "Darwin", "Android"]
    static let kernels = "CContinualKernels"

    static var sources: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources")
    }

    /// Every `import` statement in a Swift source (with `@testable`, `@_exported`, kinds such as
    /// `import struct X.Y`, and imports inside `#if` blocks).
    static func imports(in text: String) -> [String] {
        text.split(separator: "\n").compactMap { line -> String? in
            var words = line.trimmingCharacters(in: .whitespaces).split(separator: " ").map(String.init)
            while let first = words.first, first.hasPrefix("@") { words.removeFirst() }
            guard words.first == "import", words.count >= 2 else { return nil }
            let kinds: Set<String> = ["struct", "class", "enum", "protocol", "func", "var", "let", "typealias"]
            let module = kinds.contains(words[1]) && words.count >= 3 ? words[2] : words[1]
            return String(module.split(separator: ".").first ?? "")
        }
    }

    @Test("portable targets import only each other and the documented math shim", arguments: portable)
    func portableTargetsImportNoPlatformModules(_ target: String) throws {
        let dir = Self.sources.appendingPathComponent(target)
        let files = FileManager.default.enumerator(at: dir, includingPropertiesForKeys: nil)!
            .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }
        #expect(!files.isEmpty)
        for file in files {
            let relative = target + "/" + file.path.dropFirst(dir.path.count + 1)
            for module in Self.imports(in: try String(contentsOf: file, encoding: .utf8)) {
                let allowed = Self.portable.contains(module) || module == Self.kernels || (relative == Self.mathShim && Self.platformC.contains(module))
                #expect(allowed, "\(relative) imports \(module)")
            }
        }
    }

    @Test func theImportScannerSeesEveryForm() {
        let text = "import Foundation\n  @testable import X\n@_exported import struct Y.Z\n#if canImport(Glibc)\nimport Glibc\n#endif\n// import Nope"
        #expect(Self.imports(in: text) == ["Foundation", "X", "Y", "Glibc"])
    }
}
