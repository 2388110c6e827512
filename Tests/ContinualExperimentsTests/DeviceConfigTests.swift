import Foundation
import Testing
import ContinualMetrics
@testable import ContinualExperiments

/// JSON of the device options: defaults, key-path errors, and unchanged run ids without them.
@Suite struct DeviceConfigTests {
    func parse(_ extra: String) throws -> ExperimentFile {
        try ExperimentFile.parse(data: Data(tinyExperiment(extra: extra).utf8), path: "x.json")
    }

    func error(_ extra: String) -> ConfigError? {
        do {
            _ = try parse(extra)
            return nil
        } catch let e as ConfigError {
            return e
        } catch {
            Issue.record("unexpected error type: \(error)")
            return nil
        }
    }

    @Test func filesWithoutDeviceOptionsKeepTheirCanonicalJSON() throws {
        let plain = try parse("")
        #expect(!plain.runs[0].canonicalJSON.contains("device"))
        #expect(!plain.runs[0].canonicalJSON.contains("schedule"))
        #expect(!plain.runs[0].canonicalJSON.contains("early_stopping"))
        let with = try parse("\"schedule\": {\"type\": \"weekly\"}, \"quantization\": {},")
        #expect(with.runs[0].runId != plain.runs[0].runId)
        // Defaults are filled into the resolved config.
        #expect(with.runs[0].canonicalJSON.contains("\"samples_per_day\":20"))
        #expect(with.runs[0].canonicalJSON.contains("\"granularity\":\"per_channel\""))
    }

    @Test func profilesArePresetsOrObjects() throws {
        let preset = try parse("\"device\": {\"profile\": \"lowend_cpu\"},")
        #expect(preset.runs[0].config.device?.profile == .lowendCPU)
        let custom = try parse("""
            "device": {"profile": {"name": "measured", "joules_per_flop": 1e-12, "joules_per_byte": 2e-11,
                                   "flops_per_second": 5e9, "citation": "my power monitor"}},
            """)
        #expect(custom.runs[0].config.device?.profile == DeviceProfile(name: "measured", joulesPerFLOP: 1e-12,
                                                                         joulesPerByte: 2e-11, flopsPerSecond: 5e9,
                                                                         citation: "my power monitor"))
        let e = error("\"device\": {\"profile\": \"pixel\"},")
        #expect(e?.location == ".device.profile")
        #expect(e?.message.contains("lowend_cpu, phone_npu_2023") == true)
        let missing = error("\"device\": {\"profile\": {\"name\": \"x\", \"joules_per_flop\": 1e-12}},")
        #expect(missing?.location == ".device.profile.joules_per_byte")
    }

    @Test func scheduleDeviceAndQuantizationErrorsNameTheirKeys() {
        let type = error("\"schedule\": {\"type\": \"hourly\"},")
        #expect(type?.location == ".schedule.type")
        #expect(type?.message.contains("after_n_new_samples") == true)
        #expect(error("\"schedule\": {\"when\": {\"wifi\": true, \"bluetooth\": true}},")?.location == ".schedule.when.bluetooth")
        #expect(error("\"schedule\": {\"when\": {\"max_thermal\": \"hot\"}},")?.location == ".schedule.when.max_thermal")
        #expect(error("\"device\": {\"state\": {\"pattern\": \"nightly\"}},")?.location == ".device.state.pattern")
        #expect(error("\"device\": {\"state\": {\"charge_probability\": 1.5}},")?.location == ".device.state.charge_probability")
        #expect(error("\"quantization\": {\"granularity\": \"per_row\"},")?.location == ".quantization.granularity")
    }

    @Test func earlyStoppingDecodes() throws {
        let text = tinyExperiment().replacingOccurrences(
            of: "\"training\": {\"epochs\": 3, \"batch_size\": 16}",
            with: "\"training\": {\"epochs\": 3, \"batch_size\": 16, \"early_stopping\": {\"patience\": 0}}")
        do {
            _ = try ExperimentFile.parse(data: Data(text.utf8), path: "x.json")
            Issue.record("patience 0 accepted")
        } catch let e as ConfigError {
            #expect(e.location == ".training.early_stopping.patience")
        }
        let null = tinyExperiment().replacingOccurrences(
            of: "\"training\": {\"epochs\": 3, \"batch_size\": 16}",
            with: "\"training\": {\"epochs\": 3, \"batch_size\": 16, \"early_stopping\": null}")
        #expect(try ExperimentFile.parse(data: Data(null.utf8)).runs[0].config.training.earlyStopping == nil)
    }
}
