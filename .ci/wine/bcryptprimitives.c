/*
 * A stand-in for Windows' bcryptprimitives.dll, for running Go test
 * binaries under Debian 12's Wine 8.0, which lacks it. Go 1.24 and later
 * load ProcessPrng from it at start and abort when it is missing. This one
 * fills the buffer from RtlGenRandom (advapi32 SystemFunction036), which
 * Wine implements over the host's random source. Test use only: CI copies
 * it into a throw-away WINEPREFIX's system32; it never ships.
 */
#include <windows.h>
#include <ntsecapi.h>

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
    while (len > 0) {
        ULONG n = len > 0x40000000 ? 0x40000000 : (ULONG)len;
        if (!RtlGenRandom(data, n))
            return FALSE;
        data += n;
        len -= n;
    }
    return TRUE;
}
