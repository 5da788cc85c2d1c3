//! The one list of words that are no topic: function words and generic words, in English and in
//! Chinese (Simplified, Traditional and Cantonese).
//!
//! - [`STOPWORDS`]: English function words. The offline model's term finder and TextRank tokens,
//!   the query's passage ranking and the browser extension's recall drop them.
//! - [`GENERIC`]: English generic words that make no term on their own (they may be part of one:
//!   "Hash Map" yes, "Type" no).
//! - [`CJK_STOPWORDS`]: Chinese function and generic words. Base: the `zh` list of stopwords-iso
//!   1.1.0 (<https://github.com/stopwords-iso/stopwords-zh>, MIT licence; itself merged from the
//!   Baidu, HIT and Sichuan University lists), CJK entries only (its punctuation and full-width
//!   digits dropped). Added: generic words of expository text (方法, 问题, 回答, 一段, 内容, ...),
//!   the shell nouns, which name an aspect of any topic rather than a topic (Schmid 2000, *English
//!   Abstract Nouns as Conceptual Shells*; its factual, linguistic, mental, modal, eventive and
//!   circumstantial classes: 事实, 好处, 原理, 说法, 想法, 概念, 可能性, 做法, 步骤, 程度, ...), the
//!   numeral 两, Cantonese function words (嘅, 咗, 喺, 佢哋, 呢個, 唔係, ...), and the Traditional
//!   form of every entry by a per-character Simplified → Traditional map (这個 → 這個, 什么 → 什麼).
//! - [`CJK_FUNCTION`]: the function characters that never start or end a CJK term; each is an
//!   entry of [`CJK_STOPWORDS`] too.
//! - [`CJK_NUMERALS`]: the numerals and determiners that count or point at things (三, 两, 每, 这):
//!   what follows one is a classifier (张, 种, 本), so a CJK n-gram that starts with one is a
//!   quantity (两种, 每次) and one that nearly always follows one starts with a classifier (张卡片).
//!
//! [`is_cjk_stop`] is the test the term finder applies to a CJK candidate.
//!
//! *Invariant:* [`STOPWORDS`] and [`GENERIC`] are lowercase ASCII words, each once;
//! [`CJK_STOPWORDS`] is sorted and unique (binary search); nothing else in the crate keeps such a
//! list.

/// English function words that carry no topic (the offline compiler's and
/// the passage ranker's one list).
pub const STOPWORDS: &[&str] = &[
    "a", "about", "above", "after", "again", "against", "all", "also", "am", "an", "and", "any",
    "are", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both",
    "but", "by", "can", "cannot", "could", "did", "do", "does", "doing", "don", "down", "during",
    "each", "few", "for", "from", "further", "had", "has", "have", "having", "he", "her", "here",
    "hers", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself", "just",
    "let", "like", "may", "me", "might", "more", "most", "must", "my", "no", "nor", "not", "now",
    "of", "off", "on", "once", "one", "only", "or", "other", "our", "ours", "out", "over", "own",
    "same", "shall", "she", "should", "so", "some", "such", "than", "that", "the", "their",
    "theirs", "them", "then", "there", "these", "they", "this", "those", "through", "to", "too",
    "under", "until", "up", "us", "use", "used", "using", "very", "was", "we", "were", "what",
    "when", "where", "which", "while", "who", "whom", "why", "will", "with", "would", "you",
    "your", "yours", "ll", "ve", "re", "s", "t", "d", "m",
];

/// English words too generic to make a term on their own (the offline compiler's heading terms).
pub const GENERIC: &[&str] = &[
    "type",
    "value",
    "rule",
    "summary",
    "example",
    "element",
    "way",
    "thing",
    "part",
    "introduction",
    "overview",
    "conclusion",
    "note",
    "detail",
    "case",
    "kind",
    "time",
    "new",
    "different",
    "multiple",
    "default",
    "chapter",
    "section",
    "listing",
    "figure",
    "complexity",
    "complexities",
    "basic",
    "basics",
    "simple",
    "code",
    "data",
    "file",
    "directory",
    "behavior",
    "shortcut",
    "run",
    "finish",
    "step",
    "option",
];

/// CJK function characters that do not start or end a term.
pub const CJK_FUNCTION: &str = "的了是在和与也就都而及或一个这那有我你他她它们为以于之其被把让从对到说要会能可不没很更最所等并但與個這們為於讓從對說會沒並嘅咗喺唔啲嗰呢佢谁誰哪吗嗎么麼乜咩呀";

/// CJK numerals and determiners, Simplified and Traditional: what precedes a classifier.
pub const CJK_NUMERALS: &str = "一二三四五六七八九十百千万萬亿億两兩几幾每第这這那哪某各";

/// Whether `c` is one of [`CJK_NUMERALS`].
pub fn is_cjk_numeral(c: char) -> bool {
    CJK_NUMERALS.contains(c)
}

/// Whether `c` is one of [`CJK_FUNCTION`].
pub fn is_cjk_function(c: char) -> bool {
    CJK_FUNCTION.contains(c)
}

/// Chinese function and generic words, Simplified, Traditional and Cantonese, sorted by code
/// point (sources in the module docs).
#[rustfmt::skip]
pub const CJK_STOPWORDS: &[&str] = &[
    "㗎", "一", "一下", "一个", "一些", "一份", "一何", "一來", "一個", "一切", "一则", "一則",
    "一句", "一啲", "一定", "一方面", "一旦", "一条", "一来", "一样", "一條", "一樣", "一次",
    "一段", "一点", "一直", "一种", "一種", "一篇", "一类", "一般", "一起", "一轉眼", "一转眼",
    "一類", "一點", "七", "万一", "三", "上", "上下", "下", "不", "不仅", "不会", "不但",
    "不僅", "不光", "不单", "不只", "不同", "不問", "不單", "不外乎", "不如", "不妨", "不尽",
    "不尽然", "不得", "不怕", "不惟", "不成", "不拘", "不料", "不是", "不會", "不比", "不然",
    "不特", "不独", "不獨", "不盡", "不盡然", "不管", "不能", "不至于", "不至於", "不若", "不論",
    "不论", "不过", "不過", "不问", "与", "与其", "与其说", "与否", "与此同时", "且", "且不說",
    "且不说", "且說", "且说", "东西", "两", "两者", "並", "並且", "个", "个别", "中", "临", "为",
    "为了", "为什么", "为何", "为止", "为此", "为着", "主要", "乃", "乃至", "乃至于", "乃至於",
    "么", "之", "之一", "之前", "之后", "之後", "之所以", "之类", "之類", "乌乎", "乎", "乘",
    "乜", "乜嘢", "九", "也", "也好", "也是", "也罢", "也罷", "了", "事实", "事實", "事情", "二", "二來",
    "二来", "于", "于是", "于是乎", "云云", "云尔", "云爾", "五", "些", "亦", "人", "人们",
    "人們", "人家", "什", "什么", "什么样", "什麼", "什麼樣", "今", "今天", "介于", "介於",
    "仍", "仍旧", "仍舊", "从", "从此", "从而", "他", "他人", "他们", "他们们", "他們",
    "他們們", "以", "以上", "以为", "以來", "以便", "以免", "以前", "以及", "以后", "以後",
    "以故", "以期", "以来", "以為", "以至", "以至于", "以至於", "以致", "们", "任", "任何",
    "任凭", "任憑", "优势", "优点", "会", "会有", "似的", "但", "但凡", "但是", "何", "何以", "何况", "何处",
    "何时", "何時", "何況", "何處", "余外", "作为", "作為", "作用", "你", "你们", "你們",
    "你哋", "佢", "佢哋", "使", "使得", "使用", "來", "來自", "來著", "來說", "例如", "例子",
    "依", "依家", "依据", "依據", "依照", "便于", "便於", "係", "信息", "俺", "俺们", "俺們",
    "俾", "個", "個別", "們", "倘", "倘使", "倘或", "倘然", "倘若", "借", "借傥然", "借儻然",
    "假使", "假如", "假若", "做", "做法", "像", "優勢", "優點", "儿", "先不先", "光", "光是", "兒", "內", "內容",
    "全体", "全部", "全體", "兩", "兩者", "八", "六", "兮", "共", "关于", "关于具体地说", "关系", "其",
    "其一", "其中", "其二", "其他", "其余", "其它", "其实", "其實", "其次", "其餘", "具体",
    "具体地说", "具体说来", "具體", "具體地說", "具體說來", "兼之", "内", "内容", "冇", "冇乜",
    "再", "再其次", "再则", "再則", "再有", "再者", "再者說", "再者说", "再說", "再说", "冒",
    "冲", "况且", "几", "几多", "几时", "几耐", "凡", "凡是", "凭", "凭借", "出于", "出來", "出於", "出来",
    "分", "分別", "分别", "则", "则甚", "別", "別人", "別是", "別的", "別管", "別處", "別說",
    "别", "别人", "别处", "别是", "别的", "别管", "别说", "到", "則", "則甚", "前后", "前後", "前提",
    "前此", "前者", "办法", "加之", "加以", "劣势", "劣勢", "包括", "区", "区别", "區", "區別", "印象", "即", "即令", "即使", "即便", "即係",
    "即如", "即或", "即若", "却", "卻", "原因", "原理", "去", "又", "又及", "及", "及其", "及至",
    "反之", "反而", "反过来", "反过来说", "反過來", "反過來說", "受到", "另", "另一方面", "另外",
    "另悉", "只", "只当", "只怕", "只是", "只有", "只消", "只當", "只要", "只限", "叫", "叮咚",
    "可", "可以", "可是", "可能", "可能性", "可見", "可见", "各", "各个", "各位", "各個", "各种", "各種",
    "各自", "同", "同埋", "同时", "同時", "后", "后果", "后者", "向", "向使", "向着", "向著", "吓",
    "吖", "吗", "否则", "否則", "吧", "吧哒", "吧噠", "含", "吱", "呀", "呃", "呕", "呗",
    "呜", "呜呼", "呢", "呢个", "呢個", "呢啲", "呢度", "呢種", "呵", "呵呵", "呸", "呼哧",
    "咁", "咁樣", "咋", "和", "咗", "咚", "咦", "咧", "咩", "咱", "咱们", "咱們", "咳",
    "哇", "哈", "哈哈", "哉", "哎", "哎呀", "哎哟", "哎喲", "哗", "哟", "哦", "哩", "哪",
    "哪个", "哪些", "哪個", "哪儿", "哪兒", "哪天", "哪年", "哪怕", "哪样", "哪樣", "哪裡",
    "哪边", "哪邊", "哪里", "哼", "哼唷", "唄", "唉", "唔", "唔使", "唔係", "唔好", "唔會",
    "唔知", "唔系", "唔該", "唯有", "啊", "問題", "啐", "啥", "啦", "啪达", "啪達", "啱",
    "啱啱", "啲", "啷当", "啷當", "喂", "喎", "喏", "喔唷", "喲", "喺", "喽", "嗎", "嗚",
    "嗚呼", "嗡", "嗡嗡", "嗬", "嗯", "嗰", "嗰个", "嗰個", "嗰啲", "嗰度", "嗳", "嘅",
    "嘅話", "嘍", "嘎", "嘎登", "嘔", "嘘", "嘛", "嘢", "嘩", "嘻", "嘿", "嘿嘿", "噉",
    "噓", "噯", "嚇", "嚟", "囉", "四", "回答", "因", "因为", "因了", "因此", "因為",
    "因着", "因而", "因著", "固然", "在", "在下", "在于", "在於", "地", "地方", "场合", "坏处", "基于", "基於", "場合", "壞處",
    "处在", "多", "多久", "多么", "多少", "多麼", "大", "大家", "她", "她们", "她們", "好", "好似", "好处",
    "好的", "好處", "如", "如上", "如上所述", "如下", "如何", "如其", "如同", "如是", "如果", "如此",
    "如若", "始而", "孰料", "孰知", "宁", "宁可", "宁愿", "宁肯", "它", "它们", "它們", "寧",
    "寧可", "寧肯", "寧願", "对", "对于", "对待", "对方", "对比", "将", "將", "對", "對待",
    "對方", "對於", "對比", "小", "尔", "尔后", "尔尔", "尚且", "尤其", "就", "就会", "就係",
    "就是", "就是了", "就是說", "就是说", "就會", "就算", "就要", "尽", "尽管", "尽管如此", "岂但", "差別", "差别", "差异", "差異",
    "己", "已", "已矣", "已經", "已经", "巴", "巴巴", "年", "并", "并且", "幾", "幾多", "幾時",
    "幾耐", "应该", "庶乎", "庶几", "庶幾", "建議", "建议", "开外", "开始", "归", "归齐", "当", "当地", "当然", "当着", "影响", "影響",
    "彼", "彼时", "彼時", "彼此", "往", "待", "很", "很多", "很好", "後", "後果", "後者", "得",
    "得了", "從", "從此", "從而", "必要性", "怎", "怎么", "怎么办", "怎么样", "怎奈", "怎样", "怎樣",
    "怎麼", "怎麼樣", "怎麼辦", "思路", "总之", "总的来看", "总的来说", "总的说来", "总而言之", "恰恰相反",
    "您", "情况", "情況", "惟其", "想法", "意义", "意思", "意義", "意見", "意见", "慢說", "慢说", "憑", "憑借", "應該", "我", "我们",
    "我們", "我哋", "或", "或则", "或則", "或是", "或曰", "或者", "截至", "所", "所以", "所在",
    "所幸", "所有", "手段", "才", "才能", "打", "打从", "打從", "打算", "把", "抑或", "拿", "按", "按照",
    "换句话说", "换言之", "据", "据此", "接着", "接著", "提供", "換句話說", "換言之", "據", "據此",
    "故", "故此", "故而", "效果", "文章", "方式", "方法", "方面", "於", "於是", "於是乎", "旁人", "无",
    "无宁", "无论", "既", "既往", "既是", "既然", "日", "时", "时候", "时机", "时间", "是", "是以",
    "是否", "是的", "時", "時候", "時機", "時間", "更", "更多", "曾", "替", "替代", "最", "最后",
    "最好", "最後", "會", "會有", "月", "有", "有些", "有人", "有关", "有及", "有啲", "有时",
    "有時", "有点", "有的", "有關", "有點", "望", "朝", "朝着", "朝著", "本", "本人", "本地",
    "本着", "本著", "本質", "本质", "本身", "来", "来着", "来自", "来说", "東西", "极了", "果然", "果真", "某",
    "某个", "某些", "某個", "某某", "根据", "根據", "梗係", "極了", "概念", "欤", "歟", "正值", "正如",
    "正巧", "正是", "此", "此地", "此处", "此外", "此时", "此時", "此次", "此處", "此間",
    "此间", "步驟", "步骤", "歸", "歸齊", "毋宁", "毋寧", "每", "每个", "每個", "每当", "每當", "比", "比及",
    "比如", "比方", "比較", "比较", "沒", "沒奈何", "沒有", "没", "没奈何", "没有", "沿",
    "沿着", "沿著", "況且", "漫說", "漫说", "点", "為", "為了", "為什麼", "為何", "為止",
    "為此", "為著", "烏乎", "焉", "無", "無寧", "無論", "然则", "然則", "然后", "然後", "然而",
    "照", "照着", "照著", "爾", "爾後", "爾爾", "特別", "特别", "特点", "特點", "状况", "犹且", "犹自", "狀況", "猶且", "猶自",
    "现在", "现象", "現在", "現象", "甚且", "甚么", "甚或", "甚而", "甚至", "甚至于", "甚至於", "甚麼", "用",
    "用來", "用来", "由", "由于", "由於", "由是", "由此", "由此可見", "由此可见", "畀", "當",
    "當地", "當然", "當著", "的", "的确", "的確", "的話", "的话", "盡", "盡管", "盡管如此",
    "直到", "直接", "相同", "相对而言", "相對而言", "省得", "看", "看到", "看法", "真的", "眨眼", "着",
    "着呢", "睇", "矣", "矣乎", "矣哉", "知道", "离", "秒", "称", "程度", "稱", "竟而", "第",
    "第一", "第三", "第二", "等", "等到", "等等", "答案", "简单", "简言之", "管", "範圍", "簡單",
    "簡言之", "类如", "紧接着", "結果", "結論", "給", "經", "經過", "綜上所述", "緊接著", "縱", "縱令",
    "縱使", "縱然", "總之", "總的來看", "總的來說", "總的說來", "總而言之", "繼之", "繼後", "繼而",
    "纵", "纵令", "纵使", "纵然", "经", "经过", "结果", "结论", "给", "继之", "继后", "继而",
    "综上所述", "缺点", "缺點", "罢了", "罷了", "者", "而", "而且", "而况", "而后", "而外", "而家", "而已",
    "而後", "而是", "而況", "而言", "能", "能否", "腾", "臨", "自", "自个儿", "自从", "自個兒",
    "自各儿", "自各兒", "自后", "自家", "自己", "自後", "自從", "自打", "自身", "至", "至于",
    "至今", "至於", "至若", "致", "與", "與其", "與其說", "與否", "與此同時", "般的", "若",
    "若夫", "若是", "若果", "若非", "范围", "莫不然", "莫如", "莫若", "萬一", "著", "著呢", "處在",
    "虽", "虽则", "虽然", "虽说", "表示", "被", "要", "要不", "要不是", "要不然", "要么",
    "要是", "要麼", "規律", "覺得", "觀點", "观点", "规律", "觉得", "角度", "設使", "設或", "設若", "許多", "話", "該", "認為", "誠如",
    "誠然", "說", "說來", "說明", "說法", "誰", "誰人", "誰料", "誰知", "請", "論", "諸", "諸位",
    "諸如", "講", "譬喻", "譬如", "讓", "认为", "让", "许多", "论", "设使", "设或", "设若",
    "诚如", "诚然", "该", "说", "说明", "说来", "说法", "请", "诸", "诸位", "诸如", "谁", "谁人",
    "谁料", "谁知", "豈但", "賊死", "賴以", "贼死", "赖以", "赶", "起", "起見", "起见", "趁",
    "趁着", "趁著", "越是", "趕", "距", "跟", "較", "較之", "较", "较之", "辦法", "边", "过",
    "过程", "还", "还是", "还有", "还要", "这", "这一", "这一来", "这个", "这么", "这么些",
    "这么样", "这么点儿", "这些", "这会儿", "这儿", "这就是说", "这时", "这是", "这样", "这次",
    "这种", "这般", "这边", "这里", "进而", "进行", "连", "连同", "逐步", "途径", "途徑", "這", "這一",
    "這一來", "這些", "這個", "這兒", "這就是說", "這是", "這時", "這會兒", "這樣", "這次", "這種",
    "這般", "這裡", "這邊", "這麼", "這麼些", "這麼樣", "這麼點兒", "通常", "通过", "通過", "連",
    "連同", "進而", "進行", "過", "過程", "道理", "遵循", "遵照", "還", "還是", "還有", "還要", "邊",
    "邊個", "邊度", "那", "那一", "那个", "那么", "那么些", "那么样", "那些", "那会儿", "那個",
    "那儿", "那兒", "那时", "那是", "那時", "那會兒", "那样", "那樣", "那种", "那種", "那般",
    "那裡", "那边", "那邊", "那里", "那麼", "那麼些", "那麼樣", "部分", "都", "都係", "都是",
    "鄙人", "重要", "針對", "鉴于", "鑒於", "针对", "開外", "開始", "關係", "關於", "關於具體地說", "问题",
    "阿", "除", "除了", "除外", "除开", "除此之外", "除開", "除非", "随", "随后", "随时",
    "随着", "隨", "隨後", "隨時", "隨著", "难道说", "雖", "雖則", "雖然", "雖說", "離",
    "難道說", "零", "需要", "非", "非但", "非常", "非徒", "非特", "非独", "非獨", "靠", "順",
    "順著", "類如", "顺", "顺着", "餘外", "首先", "騰", "麼", "點", "點樣", "點解",
];

/// Whether `word` is an entry of [`CJK_STOPWORDS`].
pub fn is_cjk_stopword(word: &str) -> bool {
    CJK_STOPWORDS.binary_search(&word).is_ok()
}

/// Whether a CJK n-gram starts or ends with a [`CJK_FUNCTION`] character (的方法, 检索是): a cut
/// across a word boundary, no term. A whole heading is not cut, so this is the n-gram test only.
pub fn has_cjk_function_edge(gram: &str) -> bool {
    let (Some(first), Some(last)) = (gram.chars().next(), gram.chars().last()) else {
        return true;
    };
    is_cjk_function(first) || is_cjk_function(last)
}

/// Whether a CJK candidate term is no topic: it is an entry of [`CJK_STOPWORDS`] or is wholly
/// made of entries (这个问题 = 这个 + 问题; 自己的方法 = 自己 + 的 + 方法).
pub fn is_cjk_stop(term: &str) -> bool {
    let chars: Vec<char> = term.chars().collect();
    // made[i]: chars[..i] splits into entries.
    let mut made = vec![false; chars.len() + 1];
    made[0] = true;
    for end in 1..=chars.len() {
        made[end] = (0..end).any(|start| {
            made[start] && is_cjk_stopword(&chars[start..end].iter().collect::<String>())
        });
    }
    made[chars.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_keep_their_invariants() {
        for list in [STOPWORDS, GENERIC] {
            let mut seen = std::collections::BTreeSet::new();
            for w in list {
                assert!(w.chars().all(|c| c.is_ascii_lowercase()), "{w}");
                assert!(seen.insert(w), "twice: {w}");
            }
        }
        assert!(
            CJK_STOPWORDS.windows(2).all(|p| p[0] < p[1]),
            "sorted, unique"
        );
        assert!(CJK_STOPWORDS.len() > 1000);
        for c in CJK_FUNCTION.chars() {
            assert!(is_cjk_stopword(&c.to_string()), "{c}");
        }
        for c in CJK_NUMERALS.chars() {
            assert!(crate::text::is_cjk_letter(c), "{c}");
        }
    }

    #[test]
    fn cjk_function_and_generic_words_are_stop() {
        for w in [
            "什么",
            "什麼",
            "一段",
            "呢個",
            "唔係",
            "回答",
            "自己",
            "方法",
            "问题",
            "問題",
            "这个",
            "這個",
            "因为",
            "因為",
            "我们",
            "我們",
            "可以",
            "所以",
            "这个问题",
            "自己的方法",
            "做法",
            "好處",
            "原理",
        ] {
            assert!(is_cjk_stop(w), "{w}");
        }
        assert!(has_cjk_function_edge("的方法") && has_cjk_function_edge("检索是"));
        assert!(!has_cjk_function_edge("有界队列".get(3..).unwrap()));
        for w in [
            "检索增强生成",
            "知識庫",
            "背压",
            "有界队列",
            "流量控制",
            "向量",
            "大模型",
        ] {
            assert!(!is_cjk_stop(w), "{w}");
        }
    }
}
