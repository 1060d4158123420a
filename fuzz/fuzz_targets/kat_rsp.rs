//! The NIST `.rsp` reader: arbitrary text never panics, and whatever parses
//! survives a write → parse round trip (with the text's header line, if any).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = nist_kat::rsp::hex_decode(text);
    let _ = nist_kat::rsp::body(text);
    let header = nist_kat::rsp::header(text);
    if let Ok(records) = nist_kat::rsp::parse(text) {
        let written = nist_kat::rsp::write(header, &records);
        assert_eq!(nist_kat::rsp::parse(&written).as_ref(), Ok(&records));
        assert_eq!(nist_kat::rsp::header(&written), header);
    }
});
