// SPDX-License-Identifier: GPL-2.0-only
/*
 * The segment writer (wire format 1.1): every rule of section 1.1 checked
 * byte by byte by a reader written here from the spec (the shared parser
 * learns segments separately), and the spec's seg_* vectors reproduced.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <xevb/bytes.h>
#include "wire/crc32c.h"
#include <xevb/emu_payload.h>
#include "wire/mep_write.h"
#include <xevb/wire.h>
#include "../common/vectors.h"

TestSuite(seg_write, .timeout = 30);

/*
 * The valid seg_* frames of the format's 1.1 vectors (Ethernet frames, as
 * hex). seg_first + seg_middle + seg_last are the whole 3001-byte fragment
 * of event 500, source 21 (CRC-32C 14a18200); seg_max_length is the last
 * segment (bytes 64000-65534) of a 65535-byte fragment (CRC 33da4c71).
 */
static const char seg_first_hex[] =
	"0200000000020200000000010800450005dc0001400040fda6fcc6120101c612"
	"00024d45010400150001000004120000001e000001f40bb9000014a18200c0fd"
	"4a9f5c7d57482411ac4222a5754e0d929a4885ad1185d429eb2bc0d30e2d83c9"
	"2a6676329da49547e3874fd1d49cdd0fa99d2fbfade39a77bca2d19a8033b208"
	"bf5d198af82c9764360b250e85f9438a3b0199a937f455aae3bf327ded7175a2"
	"d998fca814d0387f12e99e69a0f8e4a84da34e973e8d819f8fee7c2c8c3f58c8"
	"47aa5798d934db71920bcf2054f3727493ace02d162c1ffe5c585ad3fa229762"
	"b5c9faa551a442aec46cde4226ddc9a0b9b10c4829ba2692cda59bec14f63729"
	"d1afae9ad3016baba6fcf1f10186e9f485a6514f59c6f48f5b5de37a614f4529"
	"0a26e9d2fa1064848a584c31e75f6b9dd972c6cdd44bf4d5c749cba4ebb78c96"
	"3b1e354e0264555de445d373254f4c894ae2df723908923dd1012ba144ef64a8"
	"0b51dd812fb0f69d22eb0acd1aeb9b95ea43fd6ebc8d751e37b2ceede686359e"
	"ec98e9be8b5e227fb1b45d622990125492b880798599a995427c3a8290b17a04"
	"1b9bd797e320558d2df9f67cc9e0875f36405377d7eb98d686ee49673f8b7c57"
	"10c057a4a307bb407e4525980421869ae34f849ea8f6618846f64380f9fdcb51"
	"83e29e9a70f4c0178e760af385da3357e73e39b85c2675ac2238cc80036d5155"
	"667b4ed56e768060209b0a1356e2792bf625fa05ef92b90601495ccca61ec9ef"
	"413918c64a7de0b9d5999b598b1ced719e21080ffe1b0e505a5da664e2d07de1"
	"062ff9bddf1d09959872e9eb22df3ba004e75ca3d659eb7448cd2fd6e69b93ba"
	"1c39d797d0c79c6be600f5d95cf516b5e916d978e77d77739376a6b76ef82661"
	"22cc452cd9d01cc06dbb3f97a500adcfd3fba1a39c4397593f96a5df5fa38b48"
	"0e76da57ed95db4e92872ad0b708ba048b1047b54ac33346eb152aa3bce7fad1"
	"3d7872b42b270dc6a92fc4878e9e9fded2b4f4867e7052441954fcb0cd83451b"
	"3f637c1e8d181a06a30602a682958c7d360f7d24a971e95553f42655be41a227"
	"076f1b92074a34163417a00106fd9b0234d26e9b59deb1b3face13a1eadbf1a9"
	"29664435e7a4e0e263443ddc15215075393d1d0eb014aa86e7d2b9ef016c6197"
	"1c2dc04d59a404446f18bd4252ab15fe6d20d31a20ad76f6ae6ac44c4117c1be"
	"6320b696dc6dce7216e019644657a4733e80b7c8b5718dbe7d8203cd8c25fb67"
	"d52139bd4dc090a5bd82c5a82f08c960aaac5a9dd276fabf21ffce99195f5be3"
	"7f46b57f0d23cfb3ae8ef624445fab5cfa08b7a1e0c6fc95c65acf8a2ad5d0c9"
	"381d0e969cf87c37bdfcfa877f38b96ec4885e017a975b27e5fe5496b072d18e"
	"96fe697bbd96c7e72cb26c5eccca0d3d130944d0f04701df984ba806a520e8f1"
	"f5511d2c71fcf164b6d5907a844ade8722536366b9953edc345fb2a686f42d7e"
	"cec8605127fbd162d02ce785a67f3a07949ada02aad0644542fc4f4e3ad18a9f"
	"85bb3f33cd4f95dbce426e6cf12bf974c8ef6d4a03bb8a93d185e4c23354f7b4"
	"a2001d66ecbadec854825f57ab6eed7df0133c888c2c8cae4feaef368523cdcd"
	"a7aa5e23bdf61a304e386d1fbfa3c799c8162df59c3b5024d34283d23ae45555"
	"ccc375768e053279f79e9dcc0abb8ff7fa3666914faea3f1ab9c46ce7b7dbd92"
	"6a0deaa5fee4fa53df58b6ab6f04b23bd681d599cc746ef0759f6837127ec56a"
	"7f02dbc532a7cfac618f3029a861a194d4935bd38b107c825748fb02c3ddcc5f"
	"7e41517ebeca52500eb92367e83a1278264ac09ccf5277a2dec9a306f674c4c1"
	"5a901df686796a01dc4560a3c4a11ecafffa6786736094aed5358f0214117d8a"
	"08f1ae12e1dbb716e12f0d55a2769a7ce19bcfbfd53c9611b9b085dacd43522a"
	"ac3af210126cfbe0a2021bb22f92964856f20e5d4f995269b58effd0bba2fc35"
	"71f0136046556ef79b802d7d7d23d9f2d5afeba9f58c761bff003684845d67e1"
	"9c1ad83c334b94faf04194a41238ca8030695d23b3cf40128a223b8e93a9d683"
	"2dd4d4077d484e62737f01bffc5938a0cb231953c3e144d5bdb69f0384e71c7d"
	"7628e5bdc1f4edee8995";

static const char seg_middle_hex[] =
	"0200000000020200000000010800450005dc0001400040fda6fcc6120101c612"
	"00024d45010400150001000004120000001e000001f40bb905ac14a18200a75a"
	"c89b3773205f3c65d5835c6b2bc91b50ff4093a75e9c76e8b66664ac88f443fc"
	"378d64b3546bc9f85df48a91263764a5b29c8c3d27073367be4951717fdeafda"
	"93fb491428094eb8ae6335e898f9f802dbc2cc23859f2e97413710898f8f0e77"
	"995356ed785dc532316ee0e9acc17b4d295912aaab2abe36d16de7732f60d172"
	"abcf056a308a2c1177d75f9942e28f621900440d9b011ad5d657a3f3ad581d40"
	"08f4978e5dbbdb1b674749884b7e5c12caadadaa69cef2e8e967174bae253368"
	"d322089c732459eebb585e3a7f5a2bf7c1f2aaf4ead6c2681121c9c671e7f8a8"
	"d15ab2ffe37b9c842253010788b4f23f673cc5c5e25048740c77f6ab99ca37c1"
	"fb631d1e799597baa0e3b7728730150a6bba57ddf704ce9d70da704613b9f41c"
	"3e810a48cb87743c617bfa7cd332634ec4dfc17a5f95db9fe0f1d7bbb5118221"
	"763d3036898ec1e018ad9c4ee337452c4743754c75818479279fb1d86c9a3525"
	"255fa05f3e98b60fb69e5b5688f0c35177545acbb0a9b70e5e06e51aac41a2c8"
	"5508a54926bcb24228131f4645d328758b8db98886ef83f37ae5795a3af2fe88"
	"dbf05b23886b6ff152fcf070f54b35e5a6c7a69dcd79f96ebee0f8e79e996da3"
	"db63cf39b084dc00ce107d9732d1e266b9d79ed42c5970bf3f367c6f27da8a11"
	"599085422921ccab4b521dea6ff25294f8f87cf8599d8eb38d781c82ac36698d"
	"5e348b3c5d3113d5d2fc98cac119ddd9accde04f654d903ea4fed089936ebe60"
	"619cf824ae15d121242641164074aa081bf8879ea7233c273d5eaa1e839837da"
	"6b6e2c4550954ca1c47ef1e9f3493f9625a99f4c7f3805c59acd651051e38aac"
	"c8d5657a40ce8111599fee7f7d4e3b0109055e1526b5a2bc815460551bffa679"
	"d72a0f07f5e4c6daaa19e0a1b975266124f25d13d42dd55a9b2641fd1f19a1d7"
	"8cd659e1faf0b146fc4fb72a4e2823091abf0b81a890ece54cf9ea3386c4c782"
	"3d91863beca98e789ebe284d1d49f76b6fdbc89810f39a44a3b0c8663189c4b5"
	"c2e2e1de2e56a68b77dcc662ef64ea4a76c336dad5cae017dc9b6b129a7933e9"
	"6cb7d18ff288d40249873b6e04de85429da40838ad3fae773df070ea3b94c48c"
	"ab586d17f6cbea153aace5531d8c5ab9015d28c11e946960f8bdb89b13468484"
	"79df7c4c1c0006401f26b13f6374f768765ccdd2db2d40513eb6977e63d53b99"
	"24b7fef6ad304147ab9832aac1c238c425eb335a613790eb6fa95ed815e6d0fb"
	"8154bafb76bc51bf09eaa0c024cb2f7bca07915b225a57130292df6a7f72800a"
	"913097b3fce6edc656d1c490cebf75af439c264d2332c74f66c75965f28c01b4"
	"23d63c1a8711f3eabccd2a1a90747a91a3be922edd6d79e86c2cf9d7155a74f7"
	"4464130ac1792f9d598b1123007d54bf858b25d8460c8e23c0803044c8b98324"
	"3e109821b0036a116573915be3ac48ecb25b0a501c0833f204e01ea997b7a7b3"
	"529871e6b9687fb6abadf2a8874caa6fbbecff50b9c5e565d3d1bce4579ef4e6"
	"1e35d33411057387a86f57cb6e6a7ac05e4950219f6d1a4ddfeb97ad0953e669"
	"3010cd01548515a16eed37e688b338e3e2abd262bef0322379eefecc7b414528"
	"11f3a5dc1d78e812c661ab097fce1aef4b7683bfa476911aa22e6ebf10a119c5"
	"a87435a4bc31e67b6920e0babd6f55f7da6479daaa19bfaa16f553edc1af90d2"
	"dc23a18de8888f003e0690d7f6a6ae633547d1bd9562012d79aa6d15ba66917b"
	"fe0a39e3e3b7f7310edd0bb270a8f14d1d1b0f24d9ec173b6fe0222d02e3cc55"
	"58bb8f03685aa303729e674a52f68f840bfcd18a1ca1d1d0c06ef271f48050d3"
	"ccf000f6d2968e2b874426ac7c858ead8b7bc79c67da27874f4903af07be884e"
	"74529e46f1304c7af1005905fd8d3031f437d8557eec86906028d8318922cba2"
	"08a8dc5ef39347bec22560bf96d8deff22aa6fe5801f2327f26c702987f95a06"
	"75d203338e0c2cb4d9d5464a605242448b32b776f6c35c7ae0940d6474a0fdf6"
	"9e58e98ca186ca37b458";

static const char seg_last_hex[] =
	"0200000000020200000000010800450000940001400040fdac44c6120101c612"
	"00024d45010400150001000004120000001e000001f40bb90b5814a18200ab29"
	"eac6585d5e3e80c619933d7f55492d15cae21d71d806e8506cfe5c341d392df9"
	"0cf0808652a31090ee8aa574ad6a2be755c6eaa15849f4ab0b3d2c50dabbd7f3"
	"863841ae61e23fde824b1d652580837a542af6116a75b0ab5c9abc3651c6b700"
	"0000";

static const char seg_resend_udp_hex[] =
	"020000000002020000000001080045000424000140004011a9a0c6120101c612"
	"00029c405d5c041000004d45010500150001000004120000001e000001f40bb9"
	"07d014a18200f824ae15d121242641164074aa081bf8879ea7233c273d5eaa1e"
	"839837da6b6e2c4550954ca1c47ef1e9f3493f9625a99f4c7f3805c59acd6510"
	"51e38aacc8d5657a40ce8111599fee7f7d4e3b0109055e1526b5a2bc81546055"
	"1bffa679d72a0f07f5e4c6daaa19e0a1b975266124f25d13d42dd55a9b2641fd"
	"1f19a1d78cd659e1faf0b146fc4fb72a4e2823091abf0b81a890ece54cf9ea33"
	"86c4c7823d91863beca98e789ebe284d1d49f76b6fdbc89810f39a44a3b0c866"
	"3189c4b5c2e2e1de2e56a68b77dcc662ef64ea4a76c336dad5cae017dc9b6b12"
	"9a7933e96cb7d18ff288d40249873b6e04de85429da40838ad3fae773df070ea"
	"3b94c48cab586d17f6cbea153aace5531d8c5ab9015d28c11e946960f8bdb89b"
	"1346848479df7c4c1c0006401f26b13f6374f768765ccdd2db2d40513eb6977e"
	"63d53b9924b7fef6ad304147ab9832aac1c238c425eb335a613790eb6fa95ed8"
	"15e6d0fb8154bafb76bc51bf09eaa0c024cb2f7bca07915b225a57130292df6a"
	"7f72800a913097b3fce6edc656d1c490cebf75af439c264d2332c74f66c75965"
	"f28c01b423d63c1a8711f3eabccd2a1a90747a91a3be922edd6d79e86c2cf9d7"
	"155a74f74464130ac1792f9d598b1123007d54bf858b25d8460c8e23c0803044"
	"c8b983243e109821b0036a116573915be3ac48ecb25b0a501c0833f204e01ea9"
	"97b7a7b3529871e6b9687fb6abadf2a8874caa6fbbecff50b9c5e565d3d1bce4"
	"579ef4e61e35d33411057387a86f57cb6e6a7ac05e4950219f6d1a4ddfeb97ad"
	"0953e6693010cd01548515a16eed37e688b338e3e2abd262bef0322379eefecc"
	"7b41452811f3a5dc1d78e812c661ab097fce1aef4b7683bfa476911aa22e6ebf"
	"10a119c5a87435a4bc31e67b6920e0babd6f55f7da6479daaa19bfaa16f553ed"
	"c1af90d2dc23a18de8888f003e0690d7f6a6ae633547d1bd9562012d79aa6d15"
	"ba66917bfe0a39e3e3b7f7310edd0bb270a8f14d1d1b0f24d9ec173b6fe0222d"
	"02e3cc5558bb8f03685aa303729e674a52f68f840bfcd18a1ca1d1d0c06ef271"
	"f48050d3ccf000f6d2968e2b874426ac7c858ead8b7bc79c67da27874f4903af"
	"07be884e74529e46f1304c7af1005905fd8d3031f437d8557eec86906028d831"
	"8922cba208a8dc5ef39347bec22560bf96d8deff22aa6fe5801f2327f26c7029"
	"87f95a0675d203338e0c2cb4d9d5464a605242448b32b776f6c35c7ae0940d64"
	"74a0fdf69e58e98ca186ca37b458ab29eac6585d5e3e80c619933d7f55492d15"
	"cae21d71d806e8506cfe5c341d392df90cf0808652a31090ee8aa574ad6a2be7"
	"55c6eaa15849f4ab0b3d2c50dabbd7f3863841ae61e23fde824b1d652580837a"
	"542af6116a75b0ab5c9abc3651c6b7000000";

static const char seg_max_length_hex[] =
	"0200000000020200000000010800450006300001400040fda6a8c6120101c612"
	"00024d45010400210001000004120000001e00000384fffffa0033da4c71924d"
	"f8bb860b4cd61dae98de1812cf047fbf905d3b3aa6679138421cb60a5a81561a"
	"81acc3cf55db07f00d41cd5de3cd55ab10bfc0218741e9f23b857edb54449e28"
	"13cd166e4145169742a626bc45276d06b74bc61edd3caa932fe0228642b7b0ca"
	"2c3f5cfb65b939c7ee7f4505e31bd5b90aa869626b1ea4369ade9ac14c68dace"
	"ac0ee6a21e890b1eea301d48a29c2a7fe43109cc46eda3256ac5c1c4729bbd71"
	"9f505de0dbbd947c46368beb850b92198d6ed5378a34aa52198cc51e4a9d85f0"
	"7bdbdbe08d5e832e271bbe61fb5da04960d80616f8d1f89a3eb756dca33195e6"
	"afec437af3c1bd597540edd6abb82c974ae87c8f29adaee26b70920f4c760bb7"
	"8776907e619ad5ecf83c1780f46928b7cd0ff3def50482b214dbc50b8d2f2168"
	"d878769f6c2bf852756669232d399c05641b20459758c7751feff59178cb8b86"
	"c46f326ab0aaeb87903529a6a2554063e8c3920959be9ee661010a0b6422b76d"
	"fbc50abea62f111e0b52def04e6830999b367c1403e97142e67d9c2747dbef5f"
	"ab155d9dc76b4b6a6fb3d51d935d89b61c260c6ddedf417ac58420836541c947"
	"09d427ce20aa98b939a74e3d4a4109d6269b6da123397102dc9a78a0b392b48a"
	"5b9b00d1c88701e7b88728135c7c30034bf276d9ceccaf0d40cce58cab866f76"
	"2cf8f7c6480ce63d3a8f6cf3bd197142869113867d79590f5ecde8025366efb6"
	"8871e9ae528d5c038d32991ea7e0f1b2a3311f4eeabb81249d574340f610edd9"
	"c2f165768e7223aa11ee536bc58550b57d681c185e64ed4e644e1931210d9f03"
	"6f25ae117c96b1fc76b7da7bad625520eba942e81fe3639fb2492f0dcce244a9"
	"32ea3c7c3190f383fa5715e2da539bbb3de77cf3df64e4f4c18be47662c92dc5"
	"8d1e10a6668d5282be76acc3e6d0d328555ce9f48a3d6ed1dae4e4237462df41"
	"579543c224ccec2f4b41adaa55a204d2a38d44c6505c577f707a977df4821459"
	"aef41160f8d7c139e2aa50f75f9cdb94c1de364b21291fab2bde20ca0076785a"
	"f294e7045390c3bac04bedce5fd2e0b595c8139b250e90610cf38e19b58cada5"
	"52d8f83475c7a7197ea1916e42277c7b58f2fbc77b40814153f7ccc32b689c61"
	"885f002de3aa37474d460313a41185a644f9ea110ec5b2f0af01450b4da9bb71"
	"0536e126937d5a6c71f95e3441d017cb7037407836f1926081e2c9cc994c0643"
	"b3fe77b537e0f862b7c47dd671a9cf82035872c1d12c546ade9ef89a310269ff"
	"e5bf3c41ac7b3017db1ca5f3ea66cf578119d1e36ac32bd1c75e747bd6a3db59"
	"8f74bc583fcfcf91c1ff02651f289189b2e85d48c142e974ddb22a963eb34545"
	"2a73e16c74b690aaea2b7012775ce1c4ec20f45a92006542e0ad13bcdcc68caf"
	"4254f85bf4e65e298725b76f1823d90110d6986e063b4d80078fe349e7d729de"
	"69ce781cac1d5e702092162bf9c34b66040af7073ed90b5ec057b9dd765df5cd"
	"67167cdefba1d6fbc4f462c76b067b5a7675870d5b5fa0b300ecd572f7dbfab3"
	"91ff990a8299e26100958c0bf42ca34fa00bbe939e2c679968671820088d3f05"
	"26b5e1aaa0dc039e3a845d15c483553f1e61689fc6189bcd48f668a1a27fc123"
	"ed082cd4da6944ad950537a48e636b7f17b7b8bfdd1320ae0f3dc8722cb9314c"
	"032b940e4c5fed35d13db5590c340f270d3b3e83551bd023fe6b5237fa1c03f1"
	"b866ab512118613eb2815ab7eff64e66f612843b3640bc9ba019db846ef59d06"
	"5ed88d73c37656b246f8d3c4700ee576436c8e6169c1c87a15cdd2bde52cad12"
	"1620151a58ab9fede22c56a60cf87011abe4e8cc2312f964fde5bdd5bfa94e33"
	"cd99c79e3d790612b141576d92dc43fa68a7d33f75d08d2809520c43e5336c52"
	"1561f13a61de1d3e149e2a1ad2487a2ea641723cf772768ae27b7277743902f3"
	"52617f5781fe6268cf0a0abfeb0e0c144cc13409eee733744badfa37630ddc8f"
	"cce68770d38f3d2edcef30dab976997d1b0c798c4642d9cba2e01f69714b1941"
	"348bc5d92703c61fc47fec975dd7e29a76612696090a115060f1b4878496c6b9"
	"b51cf353ef315804850bdc15aa79420d64543e75f1f789216b922e3c4edb5b08"
	"d82841b2fdeedfe96fc9b016eee1d495f8841b2ce5867410af485eca6900";

#define ETH_IP   (14 + 20)
#define MAX_SEGS 20000

static uint8_t vec_a[2048], vec_b[2048];
static uint8_t slots[4u << 20];

static size_t unhex(const char *hex, uint8_t *out, size_t cap)
{
	size_t n = strlen(hex) / 2;

	cr_assert(le(sz, n, cap), "fixture of %zu bytes", n);
	for (size_t i = 0; i < n; i++) {
		unsigned v;
		cr_assert(eq(int, sscanf(hex + 2 * i, "%2x", &v), 1));
		out[i] = (uint8_t)v;
	}
	return n;
}

/* What a reader of section 1.1 sees in one SEGMENT MEP. */
struct seg_view {
	uint8_t flags;
	uint16_t source_id;
	uint32_t packet_seq, event_id, crc32c;
	uint16_t length, seg_offset;
	uint32_t bytes; /* the segment's own payload bytes */
	bool last;
	const uint8_t *payload;
};

/*
 * Section 1.1 read from the spec: a valid segment fills view, or the test
 * fails naming the rule. mep_len is the IP (raw) or UDP payload length.
 */
static void read_segment(const uint8_t *m, size_t mep_len, struct seg_view *v)
{
	uint32_t avail;

	cr_assert(ge(sz, mep_len, 16 + 12 + 4), "a segment carries at least 4 bytes");
	cr_assert(eq(u16, xevb_ld16(m), XEVB_MEP_MAGIC));
	cr_assert(eq(u8, m[2], XEVB_MEP_VERSION));
	v->flags = m[3];
	cr_assert(eq(u8, v->flags & XEVB_MEP_F_SEGMENT, XEVB_MEP_F_SEGMENT), "flag SEGMENT");
	cr_assert(eq(u8, v->flags & ~(XEVB_MEP_F_KNOWN | XEVB_MEP_F_SEGMENT), 0), "no unknown flag");
	v->source_id = xevb_ld16(m + 4);
	cr_assert(eq(u16, xevb_ld16(m + 6), 1), "n_frags 1");
	v->packet_seq = xevb_ld32(m + 12);
	v->event_id = xevb_ld32(m + 16);
	v->length = xevb_ld16(m + 20);
	v->seg_offset = xevb_ld16(m + 22);
	v->crc32c = xevb_ld32(m + 24);
	v->payload = m + 28;
	cr_assert(gt(u16, v->length, 0), "length 1..65535");
	cr_assert(eq(u16, v->seg_offset & 3, 0), "seg_offset a multiple of 4");
	cr_assert(lt(u16, v->seg_offset, v->length), "seg_offset below length");
	avail = (uint32_t)mep_len - 16 - 12;
	v->last = (uint32_t)v->seg_offset + avail >= v->length;
	if (!v->last) {
		cr_assert(eq(u32, avail & 3, 0), "a non-last segment is a multiple of 4 bytes");
		v->bytes = avail;
		return;
	}
	v->bytes = (uint32_t)v->length - v->seg_offset;
	cr_assert(eq(u32, avail, XEVB_PAD4(v->bytes)),
		  "the last segment: its bytes, 0-3 of padding, nothing else");
	for (uint32_t i = v->bytes; i < avail; i++)
		cr_assert(eq(u8, v->payload[i], 0), "padding byte %u is zero", i);
}

static struct xevb_mep_params vec_params(void)
{
	struct xevb_mep_params p = vectors_params();

	p.ip_id = 1;
	p.source_id = 21;
	p.flags = XEVB_MEP_F_SEGMENT;
	p.packet_seq = 30;
	p.first_event_id = 500;
	p.n_frags = 1;
	p.frag_size = 3001;
	p.seg_budget = 1500 - 20;
	p.seg_crc32c = 0x14a18200;
	return p;
}

/* The 3001-byte fragment joined from the three vector frames, by their seg_offsets. */
static void vec_fragment(uint8_t *frag)
{
	static const char *const hex[] = { seg_first_hex, seg_middle_hex, seg_last_hex };
	uint32_t joined = 0;

	for (int k = 0; k < 3; k++) {
		size_t n = unhex(hex[k], vec_a, sizeof(vec_a));
		struct seg_view v;

		read_segment(vec_a + ETH_IP, n - ETH_IP, &v);
		memcpy(frag + v.seg_offset, v.payload, v.bytes);
		joined += v.bytes;
	}
	cr_assert(eq(u32, joined, 3001));
	cr_assert(eq(u32, xevb_crc32c(0, frag, 3001), 0x14a18200), "the vectors' CRC");
}

static void expect_bytes(const uint8_t *got, size_t got_len, const uint8_t *want, size_t want_len,
			 const char *what)
{
	cr_assert(eq(sz, got_len, want_len), "%s: length", what);
	for (size_t i = 0; i < want_len; i++)
		cr_assert(eq(u8, got[i], want[i]), "%s: byte %zu", what, i);
}

/* At MTU 1500 the writer cuts the fragment exactly where the vectors do. */
Test(seg_write, reproduces_seg_first_middle_last)
{
	static const char *const hex[] = { seg_first_hex, seg_middle_hex, seg_last_hex };
	static uint8_t frag[3001];
	const uint8_t *pl[1] = { frag };
	struct xevb_mep_params p = vec_params();

	vec_fragment(frag);
	p.payload = pl;
	cr_assert(eq(u32, xevb_seg_count(3001, p.seg_budget), 3));
	for (int k = 0; k < 3; k++) {
		size_t n = unhex(hex[k], vec_a, sizeof(vec_a));
		ssize_t w;

		p.seg_offset = (uint16_t)(k * 1452);
		memset(vec_b, 0xee, sizeof(vec_b));
		w = xevb_write_frame(vec_b, sizeof(vec_b), &p);
		cr_assert(gt(sz, (size_t)(w < 0 ? 0 : w), 0), "segment %d: %s", k, strerror(errno));
		expect_bytes(vec_b, (size_t)w, vec_a, n,
			     hex[k] == seg_first_hex  ? "seg_first" :
			     hex[k] == seg_middle_hex ? "seg_middle" :
							"seg_last");
		cr_assert(eq(u8, vec_b[w], 0xee), "nothing past the frame");
	}
}

/* The one-call writer: segment i in slot i, packet_seq and ip_id + i, else as the vectors. */
Test(seg_write, write_segments_matches_the_vectors)
{
	static const char *const hex[] = { seg_first_hex, seg_middle_hex, seg_last_hex };
	static uint8_t frag[3001];
	const uint8_t *pl[1] = { frag };
	struct xevb_mep_params p = vec_params();
	size_t lens[4];
	ssize_t n;

	vec_fragment(frag);
	p.payload = pl;
	p.seg_offset = 1452; /* ignored: all segments from 0 */
	n = xevb_write_segments(slots, 2048, 4, lens, &p, xevb_write_frame);
	cr_assert(eq(sz, (size_t)n, 3));
	for (int k = 0; k < 3; k++) {
		uint8_t *f = slots + (size_t)k * 2048;
		size_t vn = unhex(hex[k], vec_a, sizeof(vec_a));

		cr_assert(eq(u16, xevb_ld16(f + 18), 1 + k), "ip_id");
		cr_assert(eq(u32, xevb_ld32(f + ETH_IP + 12), 30u + (uint32_t)k), "packet_seq");
		cr_assert(eq(u16, xevb_ip_csum(f + 14, 20), 0), "IP header checksum");
		/* the rest is the vector's */
		memcpy(f + 18, vec_a + 18, 2);
		memcpy(f + 24, vec_a + 24, 2);
		memcpy(f + ETH_IP + 12, vec_a + ETH_IP + 12, 4);
		expect_bytes(f, lens[k], vec_a, vn, "segment");
	}
}

Test(seg_write, reproduces_seg_resend_udp)
{
	static uint8_t frag[3001];
	const uint8_t *pl[1] = { frag };
	struct xevb_mep_params p = vec_params();
	size_t n;
	ssize_t w;

	vec_fragment(frag); /* uses vec_a: the vector is read after */
	n = unhex(seg_resend_udp_hex, vec_a, sizeof(vec_a));
	p.payload = pl;
	p.flags = XEVB_MEP_F_SEGMENT | XEVB_MEP_F_RESEND;
	p.udp_dport = XEVB_DEFAULT_UDP_PORT;
	p.udp_sport = 40000;
	p.seg_offset = 2000;
	p.seg_budget = 1500 - 28;
	w = xevb_write_frame(vec_b, sizeof(vec_b), &p);
	cr_assert(gt(sz, (size_t)(w < 0 ? 0 : w), 0));
	expect_bytes(vec_b, (size_t)w, vec_a, n, "seg_resend_udp");
}

Test(seg_write, reproduces_seg_max_length)
{
	static uint8_t frag[65535];
	const uint8_t *pl[1] = { frag };
	struct xevb_mep_params p = vec_params();
	size_t n = unhex(seg_max_length_hex, vec_a, sizeof(vec_a));
	struct seg_view v;
	ssize_t w;

	read_segment(vec_a + ETH_IP, n - ETH_IP, &v);
	cr_assert(v.last);
	memcpy(frag + 64000, v.payload, v.bytes);
	p.payload = pl;
	p.source_id = 33;
	p.first_event_id = 900;
	p.frag_size = 65535;
	p.seg_crc32c = 0x33da4c71;
	p.seg_offset = 64000;
	p.seg_budget = (uint16_t)(n - ETH_IP); /* 9000 would do too: it is the last */
	w = xevb_write_frame(vec_b, sizeof(vec_b), &p);
	cr_assert(gt(sz, (size_t)(w < 0 ? 0 : w), 0));
	expect_bytes(vec_b, (size_t)w, vec_a, n, "seg_max_length");
	p.seg_budget = 9000 - 20;
	cr_assert(eq(sz, (size_t)xevb_write_frame(vec_b, sizeof(vec_b), &p), n));
}

Test(seg_write, stride_count_and_need)
{
	cr_assert(eq(u32, xevb_seg_stride(1480), 1452)); /* raw, MTU 1500 */
	cr_assert(eq(u32, xevb_seg_stride(1472), 1444)); /* UDP, MTU 1500 */
	cr_assert(eq(u32, xevb_seg_stride(8980), 8952));
	cr_assert(eq(u32, xevb_seg_stride(1479), 1448)); /* rounded down to 4 */
	cr_assert(eq(u32, xevb_seg_stride(32), 4));
	cr_assert(eq(u32, xevb_seg_stride(31), 0));
	cr_assert(eq(u32, xevb_seg_count(65535, 1480), 46));
	cr_assert(eq(u32, xevb_seg_count(65535, 8980), 8));
	cr_assert(eq(u32, xevb_seg_count(1452, 1480), 1));
	cr_assert(eq(u32, xevb_seg_count(1453, 1480), 2));
	cr_assert(eq(u32, xevb_seg_count(0, 1480), 0));
	cr_assert(eq(u32, xevb_seg_count(100, 31), 0));
	cr_assert(eq(int, xevb_seg_needed(1452, 1480), 0));
	cr_assert(eq(int, xevb_seg_needed(1453, 1480), 1)); /* 1456 bytes padded */
	cr_assert(eq(int, xevb_seg_needed(16000, 8980), 1));
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint8_t rnd8(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return (uint8_t)((rng * 0x2545F4914F6CDD1Dull) >> 56);
}

/*
 * Writes every segment of a fragment and reads them back by section 1.1:
 * exact count, offsets i * stride, sizes, padding, flags, headers, and the
 * bytes joined in offset order are the fragment, with its CRC.
 */
static void segment_round_trip(uint32_t length, uint16_t budget, bool udp, uint8_t flags, bool emu)
{
	static uint8_t frag[65535], joined[65536];
	const uint8_t *pl[1] = { frag };
	struct xevb_mep_params p = { 0 };
	static size_t lens[MAX_SEGS];
	uint32_t stride = xevb_seg_stride(budget), want = xevb_seg_count(length, budget);
	size_t slot = (size_t)budget + 64, hdr = udp ? 28 : 20;
	ssize_t n;

	for (uint32_t i = 0; i < length; i++)
		frag[i] = emu ? xevb_emu_byte(i) : rnd8();
	p.daddr = htonl(0xc6120002);
	p.saddr = htonl(0xc6120101);
	p.ip_proto = XEVB_DEFAULT_IP_PROTO;
	p.udp_dport = udp ? XEVB_DEFAULT_UDP_PORT : 0;
	p.source_id = 4095;
	p.flags = XEVB_MEP_F_SEGMENT | flags;
	p.run_number = 7;
	p.packet_seq = 0xfffffffe; /* wraps inside the fragment */
	p.first_event_id = 0xdeadbeef;
	p.n_frags = 1;
	p.frag_size = (uint16_t)length;
	p.payload = emu ? NULL : pl;
	p.seg_budget = budget;
	p.seg_crc32c = xevb_crc32c(0, frag, length);
	cr_assert(le(sz, slot * want, sizeof(slots)));
	memset(slots, 0xee, sizeof(slots));
	memset(joined, 0xee, sizeof(joined));
	n = xevb_write_segments(slots, slot, MAX_SEGS, lens, &p, xevb_write_ip);
	cr_assert(eq(sz, (size_t)n, want), "length %u budget %u: segments", length, budget);
	for (uint32_t i = 0; i < want; i++) {
		const uint8_t *ip = slots + i * slot;
		struct seg_view v;

		cr_assert(le(sz, lens[i] - hdr, budget), "segment %u fits the budget", i);
		cr_assert(eq(u16, xevb_ld16(ip + 2), lens[i]), "IP total length");
		cr_assert(eq(u16, xevb_ld16(ip + 6), 0x4000), "DF");
		if (udp)
			cr_assert(eq(u16, xevb_ld16(ip + 24), lens[i] - 20), "UDP length");
		cr_assert(eq(u8, ip[lens[i]], 0xee), "nothing past segment %u", i);
		read_segment(ip + hdr, lens[i] - hdr, &v);
		cr_assert(eq(u8, v.flags, p.flags));
		cr_assert(eq(u16, v.source_id, 4095));
		cr_assert(eq(u32, v.packet_seq, 0xfffffffeu + i));
		cr_assert(eq(u32, v.event_id, 0xdeadbeef));
		cr_assert(eq(u16, v.length, length));
		cr_assert(eq(u32, v.crc32c, p.seg_crc32c), "the whole fragment's CRC in every segment");
		cr_assert(eq(u32, v.seg_offset, i * stride), "segment %u offset", i);
		cr_assert(eq(int, v.last, i + 1 == want), "only the last is last");
		if (!v.last)
			cr_assert(eq(u32, v.bytes, stride), "non-last segments carry a whole stride");
		cr_assert(gt(u32, v.bytes, 0));
		memcpy(joined + v.seg_offset, v.payload, v.bytes);
	}
	cr_assert(eq(int, memcmp(joined, frag, length), 0), "the segments join to the fragment");
	cr_assert(eq(u8, joined[length], 0xee), "and nothing more");
	cr_assert(eq(u32, xevb_crc32c(0, joined, length), p.seg_crc32c));
}

Test(seg_write, every_rule_for_sizes_and_mtus)
{
	static const uint32_t lengths[] = { 1,    2,    3,    4,    5,     1451,  1452,  1453,
					    1456, 3001, 8952, 8953, 16000, 16384, 65532, 65535 };
	static const uint16_t budgets[] = { 1480, 1472, 8980, 8972, 1479, 1477, 576 - 20, 33, 32 };

	for (size_t l = 0; l < sizeof(lengths) / sizeof(lengths[0]); l++)
		for (size_t b = 0; b < sizeof(budgets) / sizeof(budgets[0]); b++)
			segment_round_trip(lengths[l], budgets[b], budgets[b] % 8 == 0 && budgets[b] > 1000,
					   (uint8_t)(l % 4), false);
}

Test(seg_write, emulator_payload_continues_across_segments)
{
	segment_round_trip(65535, 1480, false, XEVB_MEP_F_END_OF_RUN, true);
	segment_round_trip(16000, 8972, true, XEVB_MEP_F_RESEND, true);
}

Test(seg_write, refuses_what_1_1_forbids)
{
	struct xevb_mep_params p = vec_params();
	size_t lens[4];

	p.frag_size = 0; /* seg_zero_length */
	cr_assert(eq(sz, xevb_mep_len(&p), 0));
	errno = 0;
	cr_assert(eq(sz, (size_t)xevb_write_segments(slots, 2048, 4, lens, &p, xevb_write_mep), (size_t)-1));
	cr_assert(eq(int, errno, EINVAL));
	p = vec_params();
	p.seg_offset = 2; /* seg_offset_unaligned */
	cr_assert(eq(sz, xevb_mep_len(&p), 0));
	p.seg_offset = 3004; /* seg_offset_past_end */
	cr_assert(eq(sz, xevb_mep_len(&p), 0));
	p = vec_params();
	p.n_frags = 2; /* seg_two_records */
	cr_assert(eq(sz, xevb_mep_len(&p), 0));
	p = vec_params();
	p.seg_budget = 31; /* not even 4 bytes fit */
	cr_assert(eq(sz, xevb_mep_len(&p), 0));
	p = vec_params();
	p.flags |= 0x08; /* unknown flag */
	cr_assert(eq(sz, xevb_mep_len(&p), 0));
	p = vec_params();
	errno = 0;
	cr_assert(eq(sz, (size_t)xevb_write_segments(slots, 2048, 2, lens, &p, xevb_write_mep), (size_t)-1));
	cr_assert(eq(int, errno, EMSGSIZE), "3 segments, room for 2");
	errno = 0;
	cr_assert(eq(sz, (size_t)xevb_write_segments(slots, 1000, 4, lens, &p, xevb_write_mep), (size_t)-1));
	cr_assert(eq(int, errno, EMSGSIZE), "a slot smaller than a segment");
	p.flags = 0;
	errno = 0;
	cr_assert(eq(sz, (size_t)xevb_write_segments(slots, 2048, 4, lens, &p, xevb_write_mep), (size_t)-1));
	cr_assert(eq(int, errno, EINVAL), "no SEGMENT flag");
}
